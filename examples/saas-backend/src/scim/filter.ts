/**
 * SCIM filters and PATCH paths (RFC 7644 sections 3.4.2.2 and 3.5.2), read by hand into a small
 * AST. The grammar is a page long; a hand-written parser gives every refusal a position and what
 * was expected, which is what an administrator reads in their identity provider's log.
 *
 * The input comes from anyone holding a directory token, so it is bounded before it is read (2,000
 * characters, 20 levels of brackets), and every failure is a ScimError (400): never a TypeError,
 * never a stack overflow.
 */
import { ScimError } from './errors.js';

export const maxFilterLength = 2000;
/** Levels of `( )`, `not ( )` and `[ ]`, one inside the other. */
export const maxFilterDepth = 20;

export type ComparisonOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
export type ComparisonValue = string | number | boolean | null;

/** `[schema URN:]attribute[.subAttribute]`, names as written: SCIM compares them case-insensitively. */
export interface AttributePath {
  /** The schema URN written before the attribute (`urn:ietf:params:scim:schemas:core:2.0:User`). */
  schema?: string;
  attribute: string;
  subAttribute?: string;
}

export type ScimFilter =
  | { kind: 'compare'; path: AttributePath; operator: ComparisonOperator; value: ComparisonValue }
  | { kind: 'present'; path: AttributePath }
  | { kind: 'and'; filters: ScimFilter[] }
  | { kind: 'or'; filters: ScimFilter[] }
  | { kind: 'not'; filter: ScimFilter }
  /**
   * `emails[type eq "work"]`: some element of the multi-valued attribute at `path` matches
   * `filter`, whose paths name the element's sub-attributes. `emails[type eq "work"].value eq "x"`
   * (which Entra ID sends, though the RFC's grammar has no sub-attribute after the bracket) is read
   * as the same element matching both: `emails[type eq "work" and value eq "x"]`.
   */
  | { kind: 'valuePath'; path: AttributePath; filter: ScimFilter };

/**
 * A PATCH operation's target: `attr`, `attr.sub`, `urn:...:attr`, `attr[filter]` or
 * `attr[filter].sub`. With `filter`, `subAttribute` names a sub-attribute of the selected elements.
 */
export interface PatchPath extends AttributePath {
  filter?: ScimFilter;
}

const comparisonOperators = new Set<string>(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);
/** RFC 7643's ATTRNAME (a letter, then letters, digits, `-` and `_`), and `$ref`. */
const attributeName = /^\$?[A-Za-z][A-Za-z0-9_-]*$/;

/** Parses a `filter` query parameter; a bad one is a ScimError(400, 'invalidFilter'). */
export function parseFilter(text: string): ScimFilter {
  const parser = new Parser(text, 'filter');
  const filter = parser.orExpression(false);
  parser.expectEnd();
  return filter;
}

/** Parses a PATCH operation's `path`; a bad one is a ScimError(400, 'invalidPath'). */
export function parsePath(text: string): PatchPath {
  const parser = new Parser(text, 'path');
  const path = parser.patchPath();
  parser.expectEnd();
  return path;
}

type Token =
  | { type: 'word'; text: string; at: number }
  | { type: 'string'; value: string; at: number }
  | { type: 'number'; value: number; text: string; at: number }
  | { type: '(' | ')' | '[' | ']' | '.' | 'end'; at: number };

class Parser {
  private readonly tokens: Token[];
  private next = 0;
  private depth = 0;

  constructor(
    private readonly text: string,
    private readonly reading: 'filter' | 'path',
  ) {
    if (typeof text !== 'string') throw this.error(`the ${reading} must be one string`);
    if (text.length > maxFilterLength) {
      throw this.error(`the ${reading} is ${text.length} characters long; at most ${maxFilterLength} are read`);
    }
    this.tokens = tokenize(text, (detail) => this.error(detail));
  }

  orExpression(insideBrackets: boolean): ScimFilter {
    const filters = [this.andExpression(insideBrackets)];
    while (this.takeKeyword('or')) filters.push(this.andExpression(insideBrackets));
    return filters.length === 1 ? filters[0]! : { kind: 'or', filters };
  }

  patchPath(): PatchPath {
    const token = this.take();
    if (token.type !== 'word') throw this.expected('an attribute path', token);
    const path: PatchPath = this.attributePath(token);
    if (this.peek().type !== '[') return path;
    if (path.subAttribute !== undefined) throw this.misplacedBracket('after a sub-attribute');
    path.filter = this.bracketedFilter();
    if (this.peek().type === '.') path.subAttribute = this.subAttributeAfterBracket();
    return path;
  }

  expectEnd(): void {
    const token = this.peek();
    if (token.type === 'end') return;
    const what = this.reading === 'filter' ? "'and', 'or' or the end of the filter" : 'the end of the path';
    throw this.expected(what, token);
  }

  private andExpression(insideBrackets: boolean): ScimFilter {
    const filters = [this.unary(insideBrackets)];
    while (this.takeKeyword('and')) filters.push(this.unary(insideBrackets));
    return filters.length === 1 ? filters[0]! : { kind: 'and', filters };
  }

  /** `not ( ... )`, `( ... )`, or an attribute expression. */
  private unary(insideBrackets: boolean): ScimFilter {
    const token = this.peek();
    const isNot = token.type === 'word' && token.text.toLowerCase() === 'not' && this.peek(1).type === '(';
    if (isNot) this.take();
    if (isNot || token.type === '(') {
      const open = this.take();
      this.enter(open);
      const inner = this.orExpression(insideBrackets);
      this.expect(')', "')'");
      this.depth--;
      return isNot ? { kind: 'not', filter: inner } : inner;
    }
    return this.attributeExpression(insideBrackets);
  }

  /** `path pr`, `path op value`, `path[filter]`, or Entra ID's `path[filter].sub op value`. */
  private attributeExpression(insideBrackets: boolean): ScimFilter {
    const token = this.take();
    if (token.type !== 'word') throw this.expected('an attribute path, \'not\' or \'(\'', token);
    const path = this.attributePath(token);
    if (this.peek().type !== '[') return this.condition(path);

    if (insideBrackets) throw this.misplacedBracket('inside another value filter');
    if (path.subAttribute !== undefined) throw this.misplacedBracket('after a sub-attribute');
    const elementFilter = this.bracketedFilter();
    if (this.peek().type !== '.') return { kind: 'valuePath', path, filter: elementFilter };
    const subAttribute = this.subAttributeAfterBracket();
    const condition = this.condition({ attribute: subAttribute });
    const both = elementFilter.kind === 'and' ? [...elementFilter.filters, condition] : [elementFilter, condition];
    return { kind: 'valuePath', path, filter: { kind: 'and', filters: both } };
  }

  /** What follows an attribute path: `pr`, or an operator and a value. */
  private condition(path: AttributePath): ScimFilter {
    const operator = this.take();
    const keyword = operator.type === 'word' ? operator.text.toLowerCase() : '';
    if (keyword === 'pr') return { kind: 'present', path };
    if (!comparisonOperators.has(keyword)) {
      throw this.expected('an operator (eq, ne, co, sw, ew, gt, ge, lt, le or pr)', operator);
    }
    return { kind: 'compare', path, operator: keyword as ComparisonOperator, value: this.value() };
  }

  private value(): ComparisonValue {
    const token = this.take();
    if (token.type === 'string' || token.type === 'number') return token.value;
    if (token.type === 'word') {
      // ABNF's quoted literals are case-insensitive: `True` is `true`.
      const literal = token.text.toLowerCase();
      if (literal === 'true') return true;
      if (literal === 'false') return false;
      if (literal === 'null') return null;
    }
    throw this.expected('a value (a string in double quotes, a number, true, false or null)', token);
  }

  private bracketedFilter(): ScimFilter {
    const open = this.take();
    this.enter(open);
    const filter = this.orExpression(true);
    this.expect(']', "']'");
    this.depth--;
    return filter;
  }

  private subAttributeAfterBracket(): string {
    this.take(); // the '.'
    const token = this.take();
    if (token.type !== 'word' || !attributeName.test(token.text)) throw this.expected('a sub-attribute name', token);
    return token.text;
  }

  /** Splits `urn:...:attr.sub` into its schema, attribute and sub-attribute. */
  private attributePath(token: Extract<Token, { type: 'word' }>): AttributePath {
    const colon = token.text.lastIndexOf(':');
    if (colon !== -1 && !/^urn:/i.test(token.text)) throw this.expected('an attribute path (a schema prefix starts with urn:)', token);
    const schema = colon === -1 ? undefined : token.text.slice(0, colon);
    const names = token.text.slice(colon + 1).split('.');
    if (names.length > 2 || !names.every((name) => attributeName.test(name))) {
      throw this.expected('an attribute path (name or name.subName)', token);
    }
    return {
      ...(schema !== undefined ? { schema } : {}),
      attribute: names[0]!,
      ...(names[1] !== undefined ? { subAttribute: names[1] } : {}),
    };
  }

  private enter(open: Token): void {
    this.depth++;
    if (this.depth > maxFilterDepth) {
      throw this.error(`brackets nest deeper than ${maxFilterDepth} levels at character ${open.at + 1}`);
    }
  }

  private takeKeyword(keyword: 'and' | 'or'): boolean {
    const token = this.peek();
    if (token.type !== 'word' || token.text.toLowerCase() !== keyword) return false;
    this.next++;
    return true;
  }

  private expect(type: ')' | ']', description: string): void {
    const token = this.take();
    if (token.type !== type) throw this.expected(description, token);
  }

  private peek(ahead = 0): Token {
    return this.tokens[Math.min(this.next + ahead, this.tokens.length - 1)]!;
  }

  private take(): Token {
    const token = this.peek();
    if (token.type !== 'end') this.next++;
    return token;
  }

  private misplacedBracket(where: string): ScimError {
    return this.error(`a value filter '[...]' cannot stand ${where}, at character ${this.peek().at + 1}`);
  }

  private expected(what: string, found: Token): ScimError {
    return this.error(`expected ${what} at character ${found.at + 1}, found ${describe(found, this.text)}`);
  }

  private error(detail: string): ScimError {
    return this.reading === 'filter'
      ? new ScimError(400, 'invalidFilter', `Invalid filter: ${detail}`)
      : new ScimError(400, 'invalidPath', `Invalid path: ${detail}`);
  }
}

function describe(token: Token, text: string): string {
  if (token.type === 'end') return 'the end';
  const written = token.type === 'word' || token.type === 'number' ? token.text : text.slice(token.at, token.at + 20);
  return `'${written.length > 40 ? `${written.slice(0, 40)}...` : written}'`;
}

const wordCharacter = /[A-Za-z0-9_$:.-]/;
const jsonNumber = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const escapes: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** The tokens of `text`, ending with an 'end' token; `fail` makes the error of a bad character. */
function tokenize(text: string, fail: (detail: string) => ScimError): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < text.length) {
    const character = text[at]!;
    if (/\s/.test(character)) {
      at++;
    } else if ('()[]'.includes(character)) {
      tokens.push({ type: character as '(' | ')' | '[' | ']', at });
      at++;
    } else if (character === '.') {
      tokens.push({ type: '.', at });
      at++;
    } else if (character === '"') {
      const { value, end } = readString(text, at, fail);
      tokens.push({ type: 'string', value, at });
      at = end;
    } else if (character === '-' || (character >= '0' && character <= '9')) {
      jsonNumber.lastIndex = at;
      const match = jsonNumber.exec(text);
      const written = match?.[0] ?? '';
      const value = Number(written);
      if (!match || !Number.isFinite(value) || wordCharacter.test(text[at + written.length] ?? ' ')) {
        throw fail(`expected a JSON number at character ${at + 1}`);
      }
      tokens.push({ type: 'number', value, text: written, at });
      at += written.length;
    } else if (/[A-Za-z$]/.test(character)) {
      const start = at;
      while (at < text.length && wordCharacter.test(text[at]!)) at++;
      tokens.push({ type: 'word', text: text.slice(start, at), at: start });
    } else if (character === "'") {
      throw fail(`expected a string in double quotes at character ${at + 1}, found a single quote`);
    } else {
      throw fail(`unexpected character '${character}' at character ${at + 1}`);
    }
  }
  tokens.push({ type: 'end', at: text.length });
  return tokens;
}

/** A JSON string starting at `start` (its opening quote): its value and the index after it. */
function readString(text: string, start: number, fail: (detail: string) => ScimError): { value: string; end: number } {
  let value = '';
  let at = start + 1;
  while (at < text.length) {
    const character = text[at]!;
    if (character === '"') return { value, end: at + 1 };
    if (character < ' ') throw fail(`a control character in the string at character ${at + 1} must be escaped`);
    if (character !== '\\') {
      value += character;
      at++;
      continue;
    }
    const escaped = text[at + 1];
    if (escaped === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(at + 2, at + 6))) {
      value += String.fromCharCode(parseInt(text.slice(at + 2, at + 6), 16));
      at += 6;
    } else if (escaped !== undefined && escaped in escapes) {
      value += escapes[escaped];
      at += 2;
    } else {
      throw fail(`invalid escape in the string at character ${at + 1}`);
    }
  }
  throw fail(`the string starting at character ${start + 1} has no closing quote`);
}
