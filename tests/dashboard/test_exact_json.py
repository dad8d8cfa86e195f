"""The dashboard's JSON reader and writer (static/json.js), run in the browser the dashboard runs in.

JSON.parse makes every number a double, which rounds an integer beyond 2**53;
the page reads every answer of the API through json.js instead, which keeps
such a number as its digits. Both of its readers are checked: the one built
on JSON.parse's source text (Chromium since 114) and the one by hand for
browsers without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from typing import Any, Protocol

import pytest
from playwright.sync_api import Browser


class Run(Protocol):
    def __call__(self, body: str, argument: Any = None) -> Any: ...


# The module is imported as it is shipped (from a data: URL, so no server is needed); `body` gets
# the module and an argument, and what it returns comes back through JSON.stringify.
_HARNESS = """async ([source, body, argument]) => {
  const json = await import("data:text/javascript;charset=utf-8," + encodeURIComponent(source));
  return new Function("json", "argument", body)(json, argument);
}"""

BIG = 2**53 + 1
DOCUMENT = json.dumps(
    {
        "amount": BIG,
        "refund": -BIG,
        "legs": [BIG, {"fee": 2**64 + 1}, 2**53 - 1, -(2**53 - 1)],
        "rate": 0.1,
        "zero": -0.0,
        "tiny": 5e-324,
        "text": "9007199254740993",
        "nested": {"__proto__": {"polluted": True}, "empty": [{}, []]},
    }
)
READERS = ["parseJson", "parseJsonByHand"]


@pytest.fixture(scope="module")
def run(browser: Browser) -> Iterator[Run]:
    """Run a function body given `json` (the module) and `argument` in a page; return its result."""
    source = (resources.files("ratchet.serve") / "static" / "json.js").read_text()
    page = browser.new_page()

    def evaluate(body: str, argument: Any = None) -> Any:
        return page.evaluate(_HARNESS, [source, body, argument])

    yield evaluate
    page.close()


@pytest.mark.parametrize("reader", READERS)
def test_every_integer_is_read_and_written_back_digit_for_digit(run: Run, reader: str) -> None:
    body = f"""
      const value = json.{reader}(argument);
      return {{
        text: json.writeJson(value, 2),
        exact: value.amount instanceof json.ExactNumber && String(value.legs[1].fee),
        safe: typeof value.legs[2],
        prototype: Object.getPrototypeOf(value.nested) === Object.prototype && !("polluted" in {{}}),
      }};
    """
    found = run(body, DOCUMENT)

    assert json.loads(found["text"]) == json.loads(DOCUMENT)
    assert f'"amount": {BIG},' in found["text"] and f'"refund": -{BIG},' in found["text"]
    assert '"zero": -0.0' in found["text"]
    assert found["exact"] == str(2**64 + 1)
    assert found["safe"] == "number"  # a number a double holds exactly stays a number the page can count with
    assert found["prototype"]


def test_the_native_reader_is_the_one_chromium_uses(run: Run) -> None:
    body = "return JSON.parse('1', (key, value, context) => context && context.source) === '1';"
    assert run(body) is True


SAMPLES = [
    None,
    0,
    -1.5,
    1e21,
    'é \u2028 "quoted" \\ \t',
    [],
    {},
    [1, [2, []], {"a": None}],
    {"b": {"c": [True, False, {"d": "e"}]}, "": 0},
]


@pytest.mark.parametrize("indent", [0, 2])
def test_written_as_json_stringify_writes_what_holds_no_big_number(run: Run, indent: int) -> None:
    body = """
      const { samples, indent } = argument;
      return samples.map((sample) => [json.writeJson(sample, indent), JSON.stringify(sample, null, indent)]);
    """
    for mine, native in run(body, {"samples": SAMPLES, "indent": indent}):
        assert mine == native


BAD = ["", "{", "[1,]", "01", "1.", ".5", "+1", "-", "'a'", '"\t"', "tru", "1 2", '{"a" 1}', "NaN", "{,}"]


def test_the_reader_by_hand_reads_what_json_parse_reads_and_refuses_what_it_refuses(run: Run) -> None:
    body = """
      const refused = (parse, text) => {
        try {
          parse(text);
          return false;
        } catch (error) {
          return error instanceof SyntaxError;
        }
      };
      const same = (text) => json.writeJson(json.parseJsonByHand(text)) === JSON.stringify(JSON.parse(text));
      return {
        same: argument.good.map(same),
        refused: argument.bad.map((text) => [refused(JSON.parse, text), refused(json.parseJsonByHand, text)]),
      };
    """
    good = [json.dumps(sample) for sample in SAMPLES] + [' { "a" : [ 1 , 2 ] }\n', '"\\ud83d\\ude00\\u0000"']
    found = run(body, {"good": good, "bad": BAD})

    assert found["same"] == [True] * len(good)
    assert found["refused"] == [[True, True]] * len(BAD)
