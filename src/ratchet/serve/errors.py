"""How a Ratchet error or a bad request becomes an HTTP answer: a status and ``{"detail": "one line"}``.

Bad input is never a 500: an unknown record is 404, a request the task's
state refuses 409, other bad input 400, a body that does not fit its schema
422, a store that cannot be reached 503. Only a fault of the server itself
is a 500, and even then the answer is one line, with no traceback.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..errors import (
    AlreadyDecided,
    ArtifactNotFound,
    CannotResume,
    CannotRetry,
    CheckpointNotFound,
    ConflictError,
    DuplicateRecord,
    InputError,
    InvalidTransition,
    RatchetError,
    SessionNotFound,
    StepNotFound,
    StoreUnavailable,
    TaskNotFound,
    WriteRefused,
)
from ..printable import printable

__all__ = ["detail", "install_error_handlers", "status_of"]

_log = logging.getLogger("ratchet.serve")

_NOT_FOUND = (TaskNotFound, StepNotFound, SessionNotFound, ArtifactNotFound, CheckpointNotFound)
_CONFLICT = (AlreadyDecided, CannotResume, CannotRetry, InvalidTransition, DuplicateRecord, ConflictError)


def status_of(error: RatchetError) -> int:
    """The HTTP status a Ratchet error answers with."""
    if isinstance(error, _NOT_FOUND):
        return 404
    if isinstance(error, _CONFLICT):
        return 409
    if isinstance(error, WriteRefused):
        return 403
    if isinstance(error, StoreUnavailable):
        return 503
    if isinstance(error, InputError):
        return 400
    return 500


def detail(status: int, message: str) -> JSONResponse:
    """An error answer: one line a person can act on, control characters shown, not sent raw."""
    return JSONResponse({"detail": " ".join(printable(message).split())}, status_code=status)


def _validation_message(error: RequestValidationError) -> str:
    problems = []
    for problem in error.errors()[:3]:
        parts = [str(part) for part in problem.get("loc", ()) if part != "body"]
        if len(parts) > 6:  # deep in a nested value: the start and the end say where
            parts = [*parts[:3], "...", *parts[-2:]]
        where = ".".join(parts) or "body"
        if problem.get("type") == "json_invalid":
            problems.append("the body is not valid JSON")
        else:
            problems.append(f"{where}: {str(problem.get('msg', 'invalid'))[:200]}")
    return "; ".join(problems) or "the request does not fit the API's schema (see /api/openapi.json)"


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error with `detail`."""

    async def ratchet_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RatchetError)
        status = status_of(error)
        if status == 500:
            _log.error("request failed: %s", error.message)
        return detail(status, error.message)

    async def bad_request(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return detail(422, _validation_message(error))

    async def http_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, HTTPException)
        response = detail(error.status_code, str(error.detail))
        response.headers.update(error.headers or {})
        return response

    async def server_fault(_: Request, error: Exception) -> JSONResponse:
        _log.exception("request failed")
        return detail(500, f"the server failed ({type(error).__name__}); its log has the details")

    app.add_exception_handler(RatchetError, ratchet_error)
    app.add_exception_handler(RequestValidationError, bad_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, server_fault)
