"""Store URLs as people see them: every form of password hidden, the rest as written."""

from __future__ import annotations

import pytest

from ratchet.errors import StoreURLError
from ratchet.store import redact_url, store_from_url
from ratchet.store.redact import hide_secrets, secrets_of


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:secret@db:5432/work", "postgresql://u:***@db:5432/work"),
        ("postgres://u:se%40cret@db/work?sslmode=require", "postgres://u:***@db/work?sslmode=require"),
        ("postgresql://u:sec@ret@db/work", "postgresql://u:***@db/work"),  # an unencoded @ too
        ("postgresql://u@db/work?password=secret", "postgresql://u@db/work?password=***"),
        (
            "postgresql://db/work?sslmode=disable&PASSWORD=secret&sslpassword=other&pool_size=2",
            "postgresql://db/work?sslmode=disable&PASSWORD=***&sslpassword=***&pool_size=2",
        ),
        ("host=db port=1 password=secret dbname=work", "host=db port=1 password=*** dbname=work"),
        ("host=db password = 'se cret' dbname=work", "host=db password = *** dbname=work"),
        ("postgresql://u:secret@[bad", "postgresql://u:***@[bad"),
        ("postgresql://u@db/work", "postgresql://u@db/work"),
        ("sqlite:///./ratchet.db", "sqlite:///./ratchet.db"),
        ("memory://", "memory://"),
        # A read replica's URL in an option, percent-encoded: its passwords too, in any form.
        (
            "postgresql://u:a@db/w?read_url=postgresql%3A%2F%2Fr%3Asecret%40rep%3A5433%2Fw",
            "postgresql://u:***@db/w?read_url=postgresql://r:***@rep:5433/w",
        ),
        (
            "postgresql://db/w?read_url=postgresql%3A%2F%2Frep%2Fw%3Fsslmode%3Drequire%26password%3Dsecret",
            "postgresql://db/w?read_url=postgresql://rep/w%3Fsslmode%3Drequire%26password%3D***",
        ),
    ],
)
def test_every_form_of_password_is_hidden(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:s3cr%2Fet@db/work",
        "postgresql://db/work?password=s3cr%2Fet",
        "host=db password='s3cr/et'",
        "postgresql://db/work?read_url=postgresql%3A%2F%2Fr%3As3cr%252Fet%40rep%2Fwork",
    ],
)
def test_a_library_message_quoting_the_url_loses_its_passwords_in_any_spelling(url: str) -> None:
    message = f'invalid URI: "{url}" (password s3cr/et)'
    hidden = hide_secrets(message, secrets_of(url))
    assert "s3cr" not in hidden
    assert "***" in hidden


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:secret@[bad",
        "postgresql://u:secret@db:port/work",
        "postgresql://db/work?password=secret&pool_size=0",
        "host=db password=secret",
        "postgresql://u:secret@db/work?no_such_option=1",
    ],
)
def test_a_refused_url_is_quoted_without_its_password(url: str) -> None:
    with pytest.raises(StoreURLError) as caught:
        store_from_url(url)
    assert "secret" not in caught.value.message
    assert "\n" not in caught.value.message
