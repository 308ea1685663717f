//! Reads the kernel IR's text form, as [`crate::print_block`] writes it,
//! back into a [`Block`].
//!
//! The form is line-oriented: every construct but a block sits on one line,
//! indentation is free, spaces and tabs between tokens are free, and blank
//! lines are skipped. A line may end in `\r\n`. An example:
//!
//! ```text
//! block conv [n:1, f:16, x:12, i:3] #main // O(n, f, x) +=! I(...) * W(...)
//!   i + x - 1 >= 0
//!   in I[n, i + x - 1] float32(1, 1):(14, 1)
//!   out O[n, f, x]:add float32(1, 1, 1):(192, 12, 1) #acc
//!   none new T float32(4):(1) @REGS
//! {
//!   $I = load(I)
//!   $k = index(i + 2*x)
//!   $c = const.float64(0.5)
//!   $p = mul.float32($I, $c) #hot
//!   O = store($p)
//!   block inner [x:1 = x, j:4]
//!     inout T[j] float32(1):(1)
//!   {
//!     $g = gather(T, $k)
//!   } #unrolled
//! }
//! ```
//!
//! # Grammar
//!
//! ```text
//! block      := header NL { constraint NL | refinement NL } "{" NL
//!               { statement NL } "}" [tags] NL
//! header     := "block" name "[" [index {"," index}] "]" tags ["//" comment]
//! index      := name ":" uint ["=" affine] tags
//! constraint := affine ">=" "0"
//! refinement := dir ( "new" name ["[" affines "]"]
//!                   | [name "="] name "[" affines "]" )
//!               [":" agg] dtype "(" uints ")" ":" "(" ints ")"
//!               ["@" name] tags
//! dir        := "in" | "out" | "inout" | "none"
//! agg        := "assign" | "add" | "mul" | "min" | "max"
//! statement  := ( "$" name "=" "load" "(" name ")"
//!               | name "=" "store" "(" scalar ")"
//!               | "$" name "=" "index" "(" affine ")"
//!               | "$" name "=" "const" "." dtype "(" literal ")"
//!               | "$" name "=" "gather" "(" name {"," scalar} ")"
//!               | "$" name "=" op "." dtype "(" [scalar {"," scalar}] ")"
//!               ) tags
//!             | block
//! op         := "add" | "sub" | "mul" | "div" | "mod" | "lt" | "le" | "gt"
//!             | "ge" | "eq" | "ne" | "and" | "or" | "neg" | "not"
//!             | "select" | "cast" | builtin
//! scalar     := "$" name
//! tags       := {"#" name}
//! affine     := ["-"] term {("+" | "-") term}
//! term       := uint ["*" name] | name
//! name       := ident | quoted
//! ```
//!
//! - A block's header line carries its name, its indices (`name:range`,
//!   and `name:range = form` for an index passed from the parent), its tags
//!   and, after `//` and one space, its comment to the end of the line.
//! - Then come its constraints (`form >= 0`) and refinements, one a line,
//!   in any interleaving (each kind keeps its order), then the statements
//!   between a `{` line and a `}` line.
//! - A refinement names its direction, then the view: `I[access]` refines
//!   the parent's `I` into a view named `I`, `V = I[access]` into a view
//!   named `V`, and `new T` (with `[access]` only when the access is not
//!   empty) allocates a buffer local to the block (`from` is `None`). The
//!   aggregation follows as `:add`; `:assign`, the default, may be left out
//!   (the printer does). Then the element type with the view's sizes and
//!   strides, `float32(4, 4):(4, 1)`, an optional location `@REGS` and tags.
//! - Statements are listed above; a statement's tags follow it on its line.
//!   A nested block is a statement: its tags as a statement follow its
//!   closing `}` (its own tags are in its header). The outermost block's
//!   `}` takes no tags. Blocks nest at most 64 deep.
//! - Intrinsic operations use the IR's names: binary operations as listed
//!   above, `neg` and `not`, builtins by `Builtin::name` (their aliases are
//!   read too), `select` and `cast`; the statement's type follows a `.`.
//! - Types are `DType::name`s (their aliases are read too).
//! - A literal is an integer (`-12`), a float as Rust's `{:?}` writes an
//!   `f64` (`0.1`, `-0.0`, `1e-30`, `inf`, `NaN`) or `true`/`false`. A
//!   literal that reads as an `i64` is an integer, so a float always has a
//!   `.`, an exponent, or is `inf` or `NaN`.
//! - `uint` is a decimal `u64`, `int` a decimal `i64` with an optional `-`.
//!   In an affine form, a coefficient or constant's magnitude may reach
//!   `2^63` when it is negative; terms with the same index add up.
//! - An `ident` is an ASCII letter or `_`, then ASCII letters, digits and
//!   `_`. Any other name (empty, with other characters, or one of the
//!   reserved words `block in out inout none new`) is written `quoted`:
//!   between `"`s, with `\\`, `\"` and `\u{hex}` escapes. The printer
//!   escapes control characters this way; a comment escapes `\` and control
//!   characters the same way (but not `"`), so it stays on its line.
//!
//! Errors carry the 1-based line and column (in characters) of the
//! offending token and say what was expected and what was found.

use std::fmt;

use ir::{Builtin, DType, Value};

use crate::print::{agg_name, bin_name, dir_name, is_ident, un_name, AGGS, DIRS, UN_OPS};
use crate::{Affine, Agg, Block, Dim, Index, Op, RefDir, Refinement, Statement, StmtKind, Tags};

/// How deep blocks may nest (the outermost block is at depth 1).
const MAX_DEPTH: usize = 64;

/// Why a text is no block: where (1-based line and column, in characters)
/// and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

type Result<T> = std::result::Result<T, ParseError>;

/// Reads one block (and nothing else but blank lines) from `text`.
pub fn parse_block(text: &str) -> Result<Block> {
    let mut p = Parser {
        lines: text.split('\n').collect(),
        next: 0,
    };
    let Some(head) = p.next_line() else {
        return Err(p.end_of_input("`block`"));
    };
    let (block, _) = p.block(head, 1)?;
    match p.next_line() {
        Some(extra) => Err(extra.expected("end of input after the block's `}`")),
        None => Ok(block),
    }
}

/// The lines of the text and the next one to read.
struct Parser<'a> {
    lines: Vec<&'a str>,
    next: usize,
}

impl<'a> Parser<'a> {
    /// The next line that is not blank, with its leading space skipped.
    fn next_line(&mut self) -> Option<Cursor<'a>> {
        while let Some(&line) = self.lines.get(self.next) {
            self.next += 1;
            let line = line.strip_suffix('\r').unwrap_or(line);
            let mut c = Cursor {
                s: line,
                pos: 0,
                line: self.next,
            };
            c.ws();
            if c.pos < line.len() {
                return Some(c);
            }
        }
        None
    }

    /// An error at the end of the text, where `expected` was.
    fn end_of_input(&self, expected: &str) -> ParseError {
        let last = self.lines.last().copied().unwrap_or("");
        ParseError {
            line: self.lines.len(),
            col: last.chars().count() + 1,
            message: format!("expected {expected}, found end of input"),
        }
    }

    /// Reads a block whose header is `head` at nesting `depth`; a nested
    /// block's closing `}` may carry the tags of its statement, returned
    /// with it.
    fn block(&mut self, mut head: Cursor<'a>, depth: usize) -> Result<(Block, Tags)> {
        if !head.keyword("block") {
            return Err(head.expected("`block`"));
        }
        let mut b = Block::new(&head.name("a block name")?);
        head.expect('[', "`[` opening the index list")?;
        b.idxs = head.list(']', "an index", Cursor::index)?;
        b.tags = head.tags()?;
        head.ws();
        if head.rest().starts_with("//") {
            head.pos += 2;
            if head.rest().starts_with(' ') {
                head.pos += 1;
            }
            b.comment = head.unescape_rest()?;
        } else {
            head.end("a tag, a `//` comment or end of line")?;
        }
        loop {
            let Some(mut c) = self.next_line() else {
                return Err(self.end_of_input("`{` opening the statements"));
            };
            if c.eat('{') {
                c.end("end of line after `{`")?;
                break;
            }
            if let Some(dir) = DIRS.into_iter().find(|d| c.word() == Some(dir_name(*d))) {
                c.pos += dir_name(dir).len();
                b.refs.push(c.refinement(dir)?);
            } else if c.peek().is_some_and(|ch| {
                ch == '-' || ch == '"' || is_name_start(ch) || ch.is_ascii_digit()
            }) {
                b.constraints.push(c.constraint()?);
            } else {
                return Err(
                    c.expected("a constraint, a refinement (`in`, `out`, `inout`, `none`) or `{`")
                );
            }
        }
        loop {
            let Some(mut c) = self.next_line() else {
                return Err(self.end_of_input("a statement or `}`"));
            };
            if c.eat('}') {
                let nested = depth > 1;
                let tags = if nested { c.tags()? } else { Tags::new() };
                c.end(if nested {
                    "a tag or end of line after `}`"
                } else {
                    "end of line after the outermost `}` (it takes no tags)"
                })?;
                return Ok((b, tags));
            }
            if c.word() == Some("block") {
                if depth >= MAX_DEPTH {
                    return Err(c.error(format!("blocks nest deeper than {MAX_DEPTH} levels")));
                }
                let (inner, tags) = self.block(c, depth + 1)?;
                b.stmts.push(Statement {
                    kind: StmtKind::Block(Box::new(inner)),
                    tags,
                });
            } else {
                b.stmts.push(c.statement()?);
            }
        }
    }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A position in one line.
struct Cursor<'a> {
    s: &'a str,
    /// A byte offset at a character boundary.
    pos: usize,
    /// The 1-based line number.
    line: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    /// Skips spaces and tabs.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    fn error(&self, message: String) -> ParseError {
        ParseError {
            line: self.line,
            col: self.s[..self.pos].chars().count() + 1,
            message,
        }
    }

    /// What is at the cursor, for messages: a word, a number, a character
    /// or the end of the line.
    fn found(&self) -> String {
        let rest = self.rest();
        match self.peek() {
            None => "end of line".to_string(),
            Some(c) if is_name_char(c) => {
                let n = rest.find(|c| !is_name_char(c)).unwrap_or(rest.len());
                let word: String = rest[..n].chars().take(32).collect();
                format!("`{word}`")
            }
            Some(c) if c.is_control() => format!("{c:?}"),
            Some(c) => format!("`{c}`"),
        }
    }

    fn expected(&self, what: &str) -> ParseError {
        self.error(format!("expected {what}, found {}", self.found()))
    }

    /// Skips space, then consumes `c` if it is next.
    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char, what: &str) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// Skips space and checks that the line ends there.
    fn end(&mut self, what: &str) -> Result<()> {
        self.ws();
        if self.pos < self.s.len() {
            Err(self.expected(what))
        } else {
            Ok(())
        }
    }

    /// Skips space and returns the identifier that follows, unconsumed.
    fn word(&mut self) -> Option<&'a str> {
        self.ws();
        let rest = self.rest();
        let n = rest.find(|c| !is_name_char(c)).unwrap_or(rest.len());
        Some(&rest[..n]).filter(|w| is_ident(w))
    }

    /// Consumes the identifier `kw` (and not a longer one) if it is next.
    fn keyword(&mut self, kw: &str) -> bool {
        if self.word() == Some(kw) {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }

    /// Consumes an identifier; `what` names it for the error.
    fn ident(&mut self, what: &str) -> Result<&'a str> {
        match self.word() {
            Some(w) => {
                self.pos += w.len();
                Ok(w)
            }
            None => Err(self.expected(what)),
        }
    }

    /// A name: an identifier or a quoted string.
    fn name(&mut self, what: &str) -> Result<String> {
        self.ws();
        if self.peek() != Some('"') {
            return self.ident(what).map(str::to_string);
        }
        let start = self.pos;
        self.bump();
        let mut s = String::new();
        loop {
            match self.peek() {
                None => {
                    self.pos = start;
                    return Err(self.error("unterminated quoted name".to_string()));
                }
                Some('"') => {
                    self.bump();
                    return Ok(s);
                }
                Some('\\') => s.push(self.escape(true)?),
                Some(c) => {
                    s.push(c);
                    self.bump();
                }
            }
        }
    }

    /// Reads an escape at the cursor (on its `\`): `\\`, `\u{hex}`, and
    /// `\"` where `quote`.
    fn escape(&mut self, quote: bool) -> Result<char> {
        let start = self.pos;
        self.bump();
        match self.peek() {
            Some('\\') => {
                self.bump();
                return Ok('\\');
            }
            Some('"') if quote => {
                self.bump();
                return Ok('"');
            }
            Some('u') => {
                self.bump();
                if self.peek() == Some('{') {
                    let rest = &self.rest()[1..];
                    if let Some(close) = rest.find('}') {
                        let hex = &rest[..close];
                        let code = u32::from_str_radix(hex, 16).ok().filter(|_| hex.len() <= 6);
                        if let Some(c) = code.and_then(char::from_u32) {
                            self.pos += close + 2;
                            return Ok(c);
                        }
                    }
                }
            }
            _ => {}
        }
        self.pos = start;
        Err(self.error(format!(
            "invalid escape (expected {}`\\\\` or `\\u{{hex}}`)",
            if quote { "`\\\"`, " } else { "" }
        )))
    }

    /// The rest of the line with escapes resolved (a comment).
    fn unescape_rest(&mut self) -> Result<String> {
        let mut s = String::new();
        while let Some(c) = self.peek() {
            if c == '\\' {
                s.push(self.escape(false)?);
            } else {
                s.push(c);
                self.bump();
            }
        }
        Ok(s)
    }

    /// Tags: `#name` any number of times.
    fn tags(&mut self) -> Result<Tags> {
        let mut tags = Tags::new();
        while self.eat('#') {
            tags.insert(self.name("a tag name after `#`")?);
        }
        Ok(tags)
    }

    /// Items separated by `,` up to `close` (the opening bracket is read).
    fn list<T>(
        &mut self,
        close: char,
        what: &str,
        mut item: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            self.ws();
            if self.peek().is_none() {
                return Err(self.expected(what));
            }
            items.push(item(self)?);
            if self.eat(close) {
                return Ok(items);
            }
            if !self.eat(',') {
                return Err(self.expected(&format!("`,` or `{close}`")));
            }
        }
    }

    /// The digits of a decimal number (possibly none).
    fn digits(&mut self) -> &'a str {
        self.ws();
        let rest = self.rest();
        let n = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        self.pos += n;
        &rest[..n]
    }

    fn uint(&mut self, what: &str) -> Result<u64> {
        self.ws();
        let start = self.pos;
        let digits = self.digits();
        if digits.is_empty() {
            return Err(self.expected(what));
        }
        digits.parse().map_err(|_| {
            self.pos = start;
            self.error(format!("`{digits}` is out of range for {what}"))
        })
    }

    /// A `u64` magnitude and a sign as an `i64`: the magnitude may reach
    /// `2^63` when negative.
    fn signed(&mut self, negative: bool, what: &str) -> Result<i64> {
        self.ws();
        let start = self.pos;
        let m = self.uint(what)?;
        let v = if negative {
            (m <= i64::MIN.unsigned_abs()).then(|| 0i64.wrapping_sub_unsigned(m))
        } else {
            i64::try_from(m).ok()
        };
        v.ok_or_else(|| {
            self.pos = start;
            let sign = if negative { "-" } else { "" };
            self.error(format!("`{sign}{m}` is out of range for {what}"))
        })
    }

    fn int(&mut self, what: &str) -> Result<i64> {
        let negative = self.eat('-');
        self.signed(negative, what)
    }

    fn affine(&mut self) -> Result<Affine> {
        let mut a = Affine::default();
        let mut negative = self.eat('-');
        loop {
            self.ws();
            match self.peek() {
                Some(c) if c.is_ascii_digit() => {
                    let v = self.signed(negative, "an integer")?;
                    if self.eat('*') {
                        a.add_term(&self.name("an index name after `*`")?, v);
                    } else {
                        a.constant = a.constant.wrapping_add(v);
                    }
                }
                Some(c) if c == '"' || is_name_start(c) => {
                    let n = self.name("an index name")?;
                    a.add_term(&n, if negative { -1 } else { 1 });
                }
                _ => return Err(self.expected("an index name or an integer")),
            }
            if self.eat('+') {
                negative = false;
            } else if self.eat('-') {
                negative = true;
            } else {
                return Ok(a);
            }
        }
    }

    /// `name:range`, `name:1 = form`, then tags.
    fn index(&mut self) -> Result<Index> {
        let name = self.name("an index name")?;
        self.expect(':', "`:` and the index's range")?;
        let range = self.uint("a range")?;
        let affine = if self.eat('=') {
            Some(self.affine()?)
        } else {
            None
        };
        let tags = self.tags()?;
        Ok(Index {
            name,
            range,
            affine,
            tags,
        })
    }

    fn constraint(&mut self) -> Result<Affine> {
        let a = self.affine()?;
        self.ws();
        if !self.rest().starts_with(">=") {
            return Err(self.expected("`>= 0` ending the constraint"));
        }
        self.pos += 2;
        self.ws();
        let zero = self.pos;
        if self.digits() != "0" {
            self.pos = zero;
            return Err(self.expected("`0` after `>=`"));
        }
        self.end("end of line after the constraint")?;
        Ok(a)
    }

    fn dtype(&mut self) -> Result<DType> {
        self.ws();
        let start = self.pos;
        let w = self.ident("a type (`float32`, `int64`, ...)")?;
        DType::from_name(w).ok_or_else(|| {
            self.pos = start;
            self.error(format!("unknown type `{w}`"))
        })
    }

    /// A refinement after its direction.
    fn refinement(&mut self, dir: RefDir) -> Result<Refinement> {
        let affines = |c: &mut Self| c.list(']', "an affine form", Cursor::affine);
        let (from, into, access) = if self.keyword("new") {
            let into = self.name("the new buffer's name")?;
            let access = if self.eat('[') {
                affines(self)?
            } else {
                Vec::new()
            };
            (None, into, access)
        } else {
            let first = self.name("a buffer name or `new`")?;
            let (from, into) = if self.eat('=') {
                (self.name("the refined buffer's name")?, first)
            } else {
                (first.clone(), first)
            };
            self.expect('[', "`[` opening the access")?;
            (Some(from), into, affines(self)?)
        };
        let agg = if self.eat(':') {
            self.ws();
            let start = self.pos;
            let w = self.ident("an aggregation (`add`, `mul`, `min`, `max`, `assign`)")?;
            match AGGS.into_iter().find(|a| agg_name(*a) == w) {
                Some(a) => a,
                None => {
                    self.pos = start;
                    return Err(self.error(format!("unknown aggregation `{w}`")));
                }
            }
        } else {
            Agg::Assign
        };
        let dtype = self.dtype()?;
        self.expect('(', "`(` opening the sizes")?;
        let sizes = self.list(')', "a size", |c| c.uint("a size"))?;
        self.expect(':', "`:` and the strides")?;
        self.expect('(', "`(` opening the strides")?;
        self.ws();
        let strides_at = self.pos;
        let strides = self.list(')', "a stride", |c| c.int("a stride"))?;
        if strides.len() != sizes.len() {
            self.pos = strides_at;
            return Err(self.error(format!(
                "{} strides for {} sizes",
                strides.len(),
                sizes.len()
            )));
        }
        let location = if self.eat('@') {
            Some(self.name("a location name after `@`")?)
        } else {
            None
        };
        let tags = self.tags()?;
        self.end("a location, a tag or end of line")?;
        Ok(Refinement {
            dir,
            from,
            into,
            access,
            dtype,
            shape: sizes
                .into_iter()
                .zip(strides)
                .map(|(size, stride)| Dim { size, stride })
                .collect(),
            agg,
            location,
            tags,
        })
    }

    /// `$name`.
    fn scalar(&mut self) -> Result<String> {
        self.expect('$', "a scalar (`$name`)")?;
        self.name("a scalar name after `$`")
    }

    /// `(`, what `inside` reads, `)`.
    fn parens<T>(&mut self, op: &str, inside: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.expect('(', &format!("`(` after `{op}`"))?;
        let v = inside(self)?;
        self.expect(')', "`)`")?;
        Ok(v)
    }

    /// `.dtype` after an operation.
    fn op_type(&mut self, op: &str) -> Result<DType> {
        if self.peek() != Some('.') {
            return Err(self.expected(&format!("`.` and a type after `{op}`")));
        }
        self.bump();
        self.dtype()
    }

    fn literal(&mut self) -> Result<Value> {
        if self.keyword("true") {
            return Ok(Value::Bool(true));
        }
        if self.keyword("false") {
            return Ok(Value::Bool(false));
        }
        self.ws();
        let rest = self.rest();
        let n = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_')))
            .unwrap_or(rest.len());
        let token = &rest[..n];
        if token.is_empty() {
            return Err(self.expected("a literal (an integer, a float, `true` or `false`)"));
        }
        let value = match token.parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => match token.parse::<f64>() {
                Ok(f) => Value::Float(f),
                Err(_) => return Err(self.error(format!("invalid literal `{token}`"))),
            },
        };
        self.pos += n;
        Ok(value)
    }

    fn statement(&mut self) -> Result<Statement> {
        let kind = if self.eat('$') {
            let into = self.name("a scalar name after `$`")?;
            self.expect('=', "`=`")?;
            self.ws();
            let start = self.pos;
            let op = self.ident("an operation")?;
            match op {
                "load" => StmtKind::Load {
                    from: self.parens(op, |c| c.name("a buffer name"))?,
                    into,
                },
                "index" => StmtKind::LoadIndex {
                    from: self.parens(op, Cursor::affine)?,
                    into,
                },
                "gather" => {
                    let (from, indices) = self.parens(op, |c| {
                        let from = c.name("a buffer name")?;
                        let mut indices = Vec::new();
                        while c.eat(',') {
                            indices.push(c.scalar()?);
                        }
                        Ok((from, indices))
                    })?;
                    StmtKind::Gather {
                        from,
                        indices,
                        into,
                    }
                }
                "const" => {
                    let dtype = self.op_type(op)?;
                    let value = self.parens(op, Cursor::literal)?;
                    StmtKind::Constant { into, value, dtype }
                }
                _ => {
                    let Some(intrinsic) = op_from_name(op) else {
                        self.pos = start;
                        return Err(self.error(format!("unknown operation `{op}`")));
                    };
                    let dtype = self.op_type(op)?;
                    self.expect('(', &format!("`(` after `{op}.{}`", dtype.name()))?;
                    let inputs = self.list(')', "a scalar (`$name`)", Cursor::scalar)?;
                    StmtKind::Intrinsic {
                        op: intrinsic,
                        inputs,
                        into,
                        dtype,
                    }
                }
            }
        } else {
            self.ws();
            if !self.peek().is_some_and(|c| c == '"' || is_name_start(c)) {
                return Err(self.expected("a statement or `}`"));
            }
            let into = self.name("a buffer name")?;
            self.expect('=', "`=`")?;
            if !self.keyword("store") {
                return Err(self.expected("`store` (or `$` before a scalar's name)"));
            }
            let from = self.parens("store", Cursor::scalar)?;
            StmtKind::Store { from, into }
        };
        let tags = self.tags()?;
        self.end("a tag or end of line")?;
        Ok(Statement { kind, tags })
    }
}

/// The intrinsic operation a text name stands for.
fn op_from_name(s: &str) -> Option<Op> {
    if let Some(b) = ir::BinOp::ALL.into_iter().find(|b| bin_name(*b) == s) {
        return Some(Op::Binary(b));
    }
    if let Some(u) = UN_OPS.into_iter().find(|u| un_name(*u) == s) {
        return Some(Op::Unary(u));
    }
    match s {
        "select" => Some(Op::Select),
        "cast" => Some(Op::Cast),
        _ => Builtin::from_name(s).map(Op::Builtin),
    }
}
