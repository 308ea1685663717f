//! The rules file's syntax: rules of tensor-program equalities over the
//! prelude's operators, as data.
//!
//! ```text
//! # Matrix products associate.
//! rule matmul_associates
//!   a: [M, K], b: [K, N], c: [N, P]
//!   (matmul (matmul a b) c) <=> (matmul a (matmul b c))
//! ```
//!
//! A rule names its pattern variables with their shapes (size symbols,
//! integers or `{size expressions}`) or `float` for a floating-point
//! scalar, optionally gives size symbols ranges for the proofs (`where S
//! in 1:3`, upper bound excluded), and states an equation between terms:
//! `=>` rewrites the left side into the right, `<=>` both ways. A side may
//! hold several terms separated by commas (a multi-pattern: all of them
//! matched together, each equal to its counterpart). A term is an
//! operator application `(op arg ...)` with the operator's arguments in
//! its parameter order, a variable, an integer or `{size expression}`
//! (over `+ - * /`), or a float. The `#` lines just above a rule are its
//! description.
//!
//! Guarantees: a parsed rule's terms name only declared variables and
//! size symbols; every error names its line and column.

use ir::SizeExpr;

/// A line and column (1-based) in the rules file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// One rule as written.
#[derive(Clone, Debug)]
pub struct Rule {
    pub name: String,
    /// The comment lines above it, joined.
    pub doc: String,
    pub at: Pos,
    pub vars: Vec<Var>,
    /// Ranges of size symbols for the proofs: `(symbol, lo, hi)`, `hi`
    /// excluded.
    pub ranges: Vec<(String, i64, i64)>,
    pub lhs: Vec<Term>,
    pub rhs: Vec<Term>,
    /// `<=>`: the rule applies in both directions.
    pub both_ways: bool,
}

/// A pattern variable.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub kind: VarKind,
    pub at: Pos,
}

#[derive(Clone, Debug, PartialEq)]
pub enum VarKind {
    /// A float32 tensor of this shape.
    Tensor(Vec<SizeExpr>),
    /// A floating-point scalar.
    Float,
}

/// A term of an equation.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    Call {
        op: String,
        args: Vec<Term>,
        at: Pos,
    },
    Var {
        name: String,
        at: Pos,
    },
    /// An integer argument: a size expression.
    Int {
        expr: SizeExpr,
        at: Pos,
    },
    Float {
        value: f64,
        at: Pos,
    },
}

impl Term {
    pub fn at(&self) -> Pos {
        match self {
            Term::Call { at, .. } | Term::Var { at, .. } | Term::Int { at, .. } => *at,
            Term::Float { at, .. } => *at,
        }
    }
}

/// Parses a rules file; an error is `line:col: message`.
pub fn parse(text: &str) -> Result<Vec<Rule>, String> {
    let tokens = lex(text)?;
    let mut p = Parser { tokens, k: 0 };
    let mut rules = Vec::new();
    while p.peek().is_some() {
        rules.push(p.rule()?);
    }
    Ok(rules)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Punct(&'static str),
    /// A run of `#` lines, joined.
    Doc(String),
}

/// Splits `text` into tokens with their positions.
fn lex(text: &str) -> Result<Vec<(Tok, Pos)>, String> {
    const PUNCT: &[&str] = &[
        "<=>", "=>", "(", ")", "[", "]", "{", "}", ",", ":", "+", "-", "*", "/",
    ];
    let mut out: Vec<(Tok, Pos)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut col = 0;
        let chars: Vec<char> = line.chars().collect();
        while col < chars.len() {
            let at = Pos {
                line: n + 1,
                col: col + 1,
            };
            let c = chars[col];
            if c.is_whitespace() {
                col += 1;
            } else if c == '#' {
                let comment: String = chars[col + 1..].iter().collect();
                let comment = comment.trim().to_string();
                match out.last_mut() {
                    Some((Tok::Doc(d), _)) => {
                        d.push(' ');
                        d.push_str(&comment);
                    }
                    _ => out.push((Tok::Doc(comment), at)),
                }
                break;
            } else if c.is_alphabetic() || c == '_' {
                let end = (col..chars.len())
                    .find(|&k| !(chars[k].is_alphanumeric() || chars[k] == '_'))
                    .unwrap_or(chars.len());
                out.push((Tok::Ident(chars[col..end].iter().collect()), at));
                col = end;
            } else if c.is_ascii_digit() {
                let end = (col..chars.len())
                    .find(|&k| !(chars[k].is_ascii_alphanumeric() || chars[k] == '.'))
                    .unwrap_or(chars.len());
                // An exponent's sign belongs to the number.
                let mut end = end;
                if end < chars.len()
                    && matches!(chars[end], '+' | '-')
                    && matches!(chars[end - 1], 'e' | 'E')
                {
                    end = (end + 1..chars.len())
                        .find(|&k| !chars[k].is_ascii_digit())
                        .unwrap_or(chars.len());
                }
                let word: String = chars[col..end].iter().collect();
                let tok =
                    if word.contains(['.', 'e', 'E']) {
                        Tok::Float(word.parse().map_err(|_| {
                            format!("{}:{}: `{word}` is not a number", at.line, at.col)
                        })?)
                    } else {
                        Tok::Int(word.parse().map_err(|_| {
                            format!("{}:{}: `{word}` is not an integer", at.line, at.col)
                        })?)
                    };
                out.push((tok, at));
                col = end;
            } else if let Some(p) = PUNCT
                .iter()
                .find(|p| chars[col..].iter().take(p.len()).copied().eq(p.chars()))
            {
                out.push((Tok::Punct(p), at));
                col += p.len();
            } else {
                return Err(format!(
                    "{}:{}: unexpected character `{c}`",
                    at.line, at.col
                ));
            }
        }
        // A blank line parts a comment from the rule below it.
        if line.trim().is_empty() && matches!(out.last(), Some((Tok::Doc(_), _))) {
            out.pop();
        }
    }
    // A comment is a description only just above a rule.
    let keep: Vec<bool> = (0..out.len())
        .map(|k| match &out[k].0 {
            Tok::Doc(_) => matches!(out.get(k + 1), Some((Tok::Ident(w), _)) if w == "rule"),
            _ => true,
        })
        .collect();
    let mut keep = keep.into_iter();
    out.retain(|_| keep.next().unwrap_or(false));
    Ok(out)
}

/// How a binary operator of size expressions combines its operands.
type Combine = fn(&SizeExpr, &SizeExpr) -> SizeExpr;

struct Parser {
    tokens: Vec<(Tok, Pos)>,
    k: usize,
}

impl Parser {
    fn peek(&self) -> Option<&(Tok, Pos)> {
        self.tokens.get(self.k)
    }

    fn here(&self) -> Pos {
        self.peek()
            .map(|t| t.1)
            .or_else(|| self.tokens.last().map(|t| t.1))
            .unwrap_or_default()
    }

    fn error<T>(&self, msg: impl std::fmt::Display) -> Result<T, String> {
        let at = self.here();
        Err(format!("{}:{}: {msg}", at.line, at.col))
    }

    fn next(&mut self) -> Option<(Tok, Pos)> {
        let t = self.tokens.get(self.k).cloned();
        self.k += 1;
        t
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some((Tok::Punct(q), _)) if *q == p)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some((Tok::Ident(q), _)) if q == w)
    }

    fn punct(&mut self, p: &str) -> Result<(), String> {
        if self.is_punct(p) {
            self.k += 1;
            Ok(())
        } else {
            self.error(format!("expected `{p}`"))
        }
    }

    fn ident(&mut self, what: &str) -> Result<(String, Pos), String> {
        match self.peek().cloned() {
            Some((Tok::Ident(s), at)) => {
                self.k += 1;
                Ok((s, at))
            }
            _ => self.error(format!("expected {what}")),
        }
    }

    fn int(&mut self) -> Result<i64, String> {
        match self.peek().cloned() {
            Some((Tok::Int(v), _)) => {
                self.k += 1;
                Ok(v)
            }
            _ => self.error("expected an integer"),
        }
    }

    fn rule(&mut self) -> Result<Rule, String> {
        let doc = match self.peek() {
            Some((Tok::Doc(d), _)) => {
                let d = d.clone();
                self.k += 1;
                d
            }
            _ => String::new(),
        };
        if !self.is_word("rule") {
            return self.error("expected `rule`");
        }
        self.k += 1;
        let (name, at) = self.ident("the rule's name")?;
        let mut vars: Vec<Var> = Vec::new();
        while let Some((Tok::Ident(w), _)) = self.peek() {
            if w == "where" {
                break;
            }
            let (var, at) = self.ident("a variable")?;
            if vars.iter().any(|v| v.name == var) {
                return Err(format!("{}:{}: `{var}` is declared twice", at.line, at.col));
            }
            self.punct(":")?;
            let kind = if self.is_word("float") {
                self.k += 1;
                VarKind::Float
            } else {
                self.punct("[")?;
                let mut dims = Vec::new();
                while !self.is_punct("]") {
                    if !dims.is_empty() {
                        self.punct(",")?;
                    }
                    dims.push(self.dim()?);
                }
                self.k += 1;
                VarKind::Tensor(dims)
            };
            vars.push(Var {
                name: var,
                kind,
                at,
            });
            if self.is_punct(",") {
                self.k += 1;
            }
        }
        let mut ranges = Vec::new();
        if self.is_word("where") {
            self.k += 1;
            loop {
                let (s, _) = self.ident("a size symbol")?;
                if !self.is_word("in") {
                    return self.error("expected `in`");
                }
                self.k += 1;
                let lo = self.int()?;
                self.punct(":")?;
                let hi = self.int()?;
                if hi <= lo {
                    return self.error(format!("the range {lo}:{hi} of `{s}` is empty"));
                }
                ranges.push((s, lo, hi));
                if !self.is_punct(",") {
                    break;
                }
                self.k += 1;
            }
        }
        let names: Vec<String> = vars.iter().map(|v| v.name.clone()).collect();
        let lhs = self.terms(&names)?;
        let both_ways = if self.is_punct("<=>") {
            true
        } else if self.is_punct("=>") {
            false
        } else {
            return self.error("expected `=>` or `<=>` after the left side");
        };
        self.k += 1;
        let rhs = self.terms(&names)?;
        Ok(Rule {
            name,
            doc,
            at,
            vars,
            ranges,
            lhs,
            rhs,
            both_ways,
        })
    }

    fn dim(&mut self) -> Result<SizeExpr, String> {
        self.size_atom(
            ("{", "}"),
            "expected a dimension: a size symbol, an integer or `{expression}`",
        )
    }

    /// A size symbol, an integer, or a size expression between `open` and
    /// `close`; `expected` is the error otherwise.
    fn size_atom(
        &mut self,
        (open, close): (&'static str, &'static str),
        expected: &str,
    ) -> Result<SizeExpr, String> {
        match self.next() {
            Some((Tok::Ident(s), _)) => Ok(SizeExpr::sym(&s)),
            Some((Tok::Int(v), _)) => Ok(SizeExpr::constant(v)),
            Some((Tok::Punct(p), _)) if p == open => {
                let e = self.sum()?;
                self.punct(close)?;
                Ok(e)
            }
            _ => {
                self.k -= 1;
                self.error(expected)
            }
        }
    }

    fn terms(&mut self, vars: &[String]) -> Result<Vec<Term>, String> {
        let mut out = vec![self.term(vars)?];
        while self.is_punct(",") {
            self.k += 1;
            out.push(self.term(vars)?);
        }
        Ok(out)
    }

    fn term(&mut self, vars: &[String]) -> Result<Term, String> {
        match self.next() {
            Some((Tok::Punct("("), at)) => {
                let (op, _) = self.ident("an operator")?;
                let mut args = Vec::new();
                while !self.is_punct(")") {
                    if self.peek().is_none() {
                        return self.error("expected `)`");
                    }
                    args.push(self.term(vars)?);
                }
                self.k += 1;
                Ok(Term::Call { op, args, at })
            }
            Some((Tok::Ident(name), at)) if vars.contains(&name) => Ok(Term::Var { name, at }),
            Some((Tok::Ident(name), at)) => Ok(Term::Int {
                expr: SizeExpr::sym(&name),
                at,
            }),
            Some((Tok::Int(v), at)) => Ok(Term::Int {
                expr: SizeExpr::constant(v),
                at,
            }),
            Some((Tok::Punct("-"), at)) => match self.next() {
                Some((Tok::Int(v), _)) => Ok(Term::Int {
                    expr: SizeExpr::constant(-v),
                    at,
                }),
                Some((Tok::Float(v), _)) => Ok(Term::Float { value: -v, at }),
                _ => {
                    self.k -= 1;
                    self.error("expected a number after `-`")
                }
            },
            Some((Tok::Float(value), at)) => Ok(Term::Float { value, at }),
            Some((Tok::Punct("{"), at)) => {
                let expr = self.sum()?;
                self.punct("}")?;
                Ok(Term::Int { expr, at })
            }
            _ => {
                self.k = self.k.saturating_sub(1);
                self.error("expected a term: `(operator ...)`, a variable or a number")
            }
        }
    }

    /// A size expression: products and quotients joined by `+` and `-`.
    fn sum(&mut self) -> Result<SizeExpr, String> {
        self.chain(&[("+", SizeExpr::add), ("-", SizeExpr::sub)], Self::product)
    }

    fn product(&mut self) -> Result<SizeExpr, String> {
        self.chain(&[("*", SizeExpr::mul), ("/", SizeExpr::div)], Self::atom)
    }

    /// Operands read by `operand`, joined left to right by the operators
    /// of one precedence level.
    fn chain(
        &mut self,
        ops: &[(&str, Combine)],
        operand: fn(&mut Self) -> Result<SizeExpr, String>,
    ) -> Result<SizeExpr, String> {
        let mut e = operand(self)?;
        while let Some((_, f)) = ops.iter().find(|(p, _)| self.is_punct(p)) {
            self.k += 1;
            e = f(&e, &operand(self)?);
        }
        Ok(e)
    }

    fn atom(&mut self) -> Result<SizeExpr, String> {
        self.size_atom(("(", ")"), "expected a size symbol, an integer or `(`")
    }
}
