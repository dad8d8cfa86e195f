// The API's JSON read and written without losing a number. JSON.parse makes
// every number a double, which holds integers exactly only up to 2^53: a tool
// argument 9007199254740993 would be read, shown and sent back as ...992.
// Here such a number stays its digits (an ExactNumber), so the page shows what
// the server holds. What a person types is never parsed here: it goes to the
// server as text (decisions.js), which reads it exactly.

/** A number a double cannot hold exactly, kept as the digits the server sent. */
export class ExactNumber {
  constructor(text) {
    this.text = text;
    Object.freeze(this);
  }

  toString() {
    return this.text;
  }
}

const INTEGER = /^-?(?:0|[1-9]\d*)$/;

/** `value` (the double JSON.parse made of `source`), or the digits when the double is not exactly them. */
function exactly(value, source) {
  const lost = INTEGER.test(source) ? !Number.isSafeInteger(value) : !Number.isFinite(value) || Object.is(value, -0);
  return lost ? new ExactNumber(source) : value;
}

// Where JSON.parse hands a reviver each number's source text (Chromium since 114), it does the work.
const HAS_SOURCE = (() => {
  let seen = false;
  JSON.parse("1", (key, value, context) => {
    seen = context !== undefined && context.source === "1";
    return value;
  });
  return seen;
})();

/** JSON text as values, every number exact (ExactNumber beyond what a double holds); throws SyntaxError. */
export function parseJson(text) {
  if (!HAS_SOURCE) return parseJsonByHand(text);
  return JSON.parse(text, (key, value, context) => (typeof value === "number" ? exactly(value, context.source) : value));
}

const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const SPACE = /[ \t\n\r]*/y;

/** What parseJson does where JSON.parse gives no source text: a reader of JSON's grammar, by hand. Exported for its tests. */
export function parseJsonByHand(text) {
  let at = 0;
  const fail = (what) => {
    throw new SyntaxError(`${what} at position ${at} of the JSON`);
  };
  const skip = () => {
    SPACE.lastIndex = at;
    SPACE.exec(text);
    at = SPACE.lastIndex;
  };
  const token = (pattern) => {
    pattern.lastIndex = at;
    const found = pattern.exec(text);
    if (!found) return null;
    at = pattern.lastIndex;
    return found[0];
  };
  const string = () => {
    const source = token(STRING);
    if (source === null) fail("expected a string");
    return JSON.parse(source);
  };
  const expect = (char) => {
    skip();
    if (text[at] !== char) fail(`expected '${char}'`);
    at += 1;
  };
  const value = () => {
    skip();
    const char = text[at];
    if (char === "{") {
      at += 1;
      const object = {};
      skip();
      if (text[at] === "}") {
        at += 1;
        return object;
      }
      for (;;) {
        skip();
        const key = string();
        expect(":");
        // As JSON.parse does: a key "__proto__" is a property, not the object's prototype.
        Object.defineProperty(object, key, { value: value(), enumerable: true, writable: true, configurable: true });
        skip();
        if (text[at] === "}") {
          at += 1;
          return object;
        }
        expect(",");
      }
    }
    if (char === "[") {
      at += 1;
      const array = [];
      skip();
      if (text[at] === "]") {
        at += 1;
        return array;
      }
      for (;;) {
        array.push(value());
        skip();
        if (text[at] === "]") {
          at += 1;
          return array;
        }
        expect(",");
      }
    }
    if (char === '"') return string();
    for (const [word, meaning] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return meaning;
      }
    }
    const source = token(NUMBER);
    if (source === null) fail("unexpected character");
    return exactly(Number(source), source);
  };
  const parsed = value();
  skip();
  if (at < text.length) fail("unexpected text after the JSON value");
  return parsed;
}

function write(value, step, margin) {
  if (value instanceof ExactNumber) return value.text;
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (typeof value.toJSON === "function") return write(value.toJSON(), step, margin);
  const inner = margin + step;
  const [open, comma, close] = step ? [`\n${inner}`, `,\n${inner}`, `\n${margin}`] : ["", ",", ""];
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return `[${open}${value.map((item) => write(item, step, inner)).join(comma)}${close}]`;
  }
  const keys = Object.keys(value).filter((key) => value[key] !== undefined && typeof value[key] !== "function");
  if (!keys.length) return "{}";
  const colon = step ? ": " : ":";
  return `{${open}${keys.map((key) => `${JSON.stringify(key)}${colon}${write(value[key], step, inner)}`).join(comma)}${close}}`;
}

/** `value` as JSON text, as JSON.stringify(value, null, indent) writes it, with each ExactNumber's digits. */
export function writeJson(value, indent = 0) {
  return write(value, " ".repeat(indent), "");
}
