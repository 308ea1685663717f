//! The parser: tokens to a syntax tree ([`crate::ast`]).
//!
//! Recursive descent with precedence climbing for expressions. Never panics:
//! every problem is a diagnostic. Nesting is limited to [`MAX_DEPTH`] so
//! hostile input cannot overflow the stack here or in later recursive
//! passes; a region (a `for` or `if` block) counts as a level, so regions
//! and the expressions inside them share the limit. After an error the
//! parser skips to the next statement (a token that starts a line), the end
//! of the enclosing block or the next `def`, so one file reports several
//! errors.
//!
//! Regions are written as `ir::print` prints them:
//!
//! ```text
//! stmt    := ... | results '=' region
//! results := NAME | '(' [NAME {',' NAME}] ')'
//! region  := 'for' NAME ['in' '0' ':' expr] ['while' expr]
//!            'carry' '(' [TYPE NAME '=' NAME {',' ...}] ')' block
//!          | 'if' expr block 'else' block
//! block   := '{' {stmt} 'yield' results '}'
//! ```
//!
//! `for`, `if`, `in`, `while`, `carry`, `else` and `yield` are keywords
//! only where this grammar expects them: `for` and `if` right after the
//! `=` of a statement (so the checker reserves them as def names), and
//! `yield` at the start of a statement in a block unless the statement
//! writes a tensor of that name (`yield(i) = ...`).

use crate::ast::*;
use crate::diag::{Diagnostic, Span};
use crate::lexer::{Tok, Token};
use ir::{BinOp, DType, Reduction, UnOp};

/// Deepest expression nesting accepted.
pub const MAX_DEPTH: usize = 256;

type PResult<T> = Result<T, Diagnostic>;

pub fn parse(tokens: Vec<Token>) -> (File, Vec<Diagnostic>) {
    let mut p = Parser {
        toks: tokens,
        pos: 0,
        errs: Vec::new(),
        depth: 0,
        nesting: 0,
    };
    let file = p.file();
    (file, p.errs)
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    errs: Vec<Diagnostic>,
    depth: usize,
    /// How many region blocks enclose the statement being parsed.
    nesting: usize,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Int(v) => format!("`{v}`"),
        Tok::Float(v) => format!("`{v}`"),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Eof => "end of file".to_string(),
    }
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn peek_at(&self, k: usize) -> &Token {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)]
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.toks[self.pos - 1].span.end
        }
    }

    fn is(&self, p: &str) -> bool {
        matches!(&self.peek().tok, Tok::Punct(q) if *q == p)
    }

    fn is_ident(&self, s: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(q) if q == s)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.is(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn unexpected(&self, wanted: &str) -> Diagnostic {
        let t = self.peek();
        Diagnostic::error(
            format!("expected {wanted}, found {}", describe(&t.tok)),
            t.span,
        )
        .with_label(format!("expected {wanted} here"))
    }

    fn expect(&mut self, p: &str) -> PResult<Span> {
        if self.is(p) {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(&format!("`{p}`")))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match &self.peek().tok {
            Tok::Ident(s) => {
                let name = s.clone();
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// Parses `item, item, ...` up to (not including) a `)`; nothing if the
    /// next token is `)`.
    fn comma_list(&mut self, mut item: impl FnMut(&mut Self) -> PResult<()>) -> PResult<()> {
        if self.is(")") {
            return Ok(());
        }
        loop {
            item(self)?;
            if !self.eat(",") {
                return Ok(());
            }
        }
    }

    fn file(&mut self) -> File {
        let mut defs = Vec::new();
        while self.peek().tok != Tok::Eof {
            if self.is_ident("def") {
                match self.def() {
                    Ok(d) => defs.push(d),
                    Err(e) => {
                        self.errs.push(e);
                        self.skip_to_def();
                    }
                }
            } else {
                let t = self.bump();
                self.errs.push(
                    Diagnostic::error(
                        format!("expected `def`, found {}", describe(&t.tok)),
                        t.span,
                    )
                    .with_help("a TC file is a list of `def name(params) -> (results) { ... }`"),
                );
                self.skip_to_def();
            }
        }
        File { defs }
    }

    fn skip_to_def(&mut self) {
        while self.peek().tok != Tok::Eof && !(self.is_ident("def") && self.peek().line_start) {
            self.bump();
        }
    }

    fn def(&mut self) -> PResult<DefAst> {
        let start = self.bump().span;
        let name = self.ident("a def name")?;
        self.expect("(")?;
        let mut params = Vec::new();
        self.comma_list(|p| {
            let ty = p.type_ast()?;
            let pname = p.ident("a parameter name")?;
            params.push(ParamAst { ty, name: pname });
            Ok(())
        })?;
        self.expect(")")?;
        self.expect("->").map_err(|e| {
            e.with_help("a def's results follow `->`: `def f(float(N) A) -> (B) { ... }`")
        })?;
        self.expect("(")?;
        let mut returns = Vec::new();
        self.comma_list(|p| {
            returns.push(p.return_ast()?);
            Ok(())
        })?;
        self.expect(")")?;
        self.expect("{")?;
        let mut stmts = Vec::new();
        loop {
            if self.is("}") {
                break;
            }
            if self.peek().tok == Tok::Eof {
                return Err(Diagnostic::error(
                    format!("def `{}` is not closed", name.name),
                    name.span,
                )
                .with_label("this def")
                .with_help("add `}` after its last statement"));
            }
            if self.is_ident("def") && self.peek().line_start {
                return Err(Diagnostic::error(
                    format!("def `{}` is not closed", name.name),
                    name.span,
                )
                .with_label("this def")
                .with_extra(self.peek().span, "the next def starts here")
                .with_help("add `}` after its last statement"));
            }
            let before = self.pos;
            if self.at_yield() {
                self.errs.push(
                    Diagnostic::error("`yield` outside a region", self.peek().span)
                        .with_label("a def's statements end without `yield`")
                        .with_help("`yield` ends the block of a `for` or an `if`; a def returns the results listed after `->`"),
                );
                self.skip_stmt(before);
                continue;
            }
            match self.stmt() {
                Ok(s) => stmts.push(s),
                Err(e) => {
                    self.errs.push(e);
                    self.skip_stmt(before);
                }
            }
        }
        let end = self.expect("}")?;
        Ok(DefAst {
            name,
            params,
            returns,
            stmts,
            span: start.to(end),
        })
    }

    /// Skips to the start of the next statement, making progress.
    fn skip_stmt(&mut self, before: usize) {
        if self.pos == before {
            self.bump();
        }
        while self.peek().tok != Tok::Eof
            && !self.is("}")
            && !(self.peek().line_start
                && matches!(self.peek().tok, Tok::Ident(_) | Tok::Punct("(")))
        {
            self.bump();
        }
    }

    fn dtype(&mut self) -> PResult<(DType, Span)> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Ident(s) => match DType::from_name(s) {
                Some(d) => {
                    self.bump();
                    Ok((d, t.span))
                }
                None => Err(Diagnostic::error(format!("unknown type `{s}`"), t.span)
                    .with_label("expected an element type")
                    .with_help("element types: float, float32, float64, double, float16 (half), bfloat16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float4e2m1, int, int8/16/32/64, uint8/16/32/64, bool")),
            },
            _ => Err(self.unexpected("a type")),
        }
    }

    fn type_ast(&mut self) -> PResult<TypeAst> {
        let (dtype, span) = self.dtype()?;
        if !self.is("(") {
            return Ok(TypeAst {
                dtype,
                span,
                dims: None,
            });
        }
        self.bump();
        let mut dims = Vec::new();
        self.comma_list(|p| {
            let e = p.binary(1)?;
            dims.push(match e.kind {
                ExprKind::Name(n) => DimAst::Sym(Ident {
                    name: n,
                    span: e.span,
                }),
                ExprKind::Int(v) => DimAst::Const(v, e.span),
                _ => DimAst::Expr(e),
            });
            Ok(())
        })?;
        let end = self.expect(")")?;
        Ok(TypeAst {
            dtype,
            span: span.to(end),
            dims: Some(dims),
        })
    }

    fn return_ast(&mut self) -> PResult<ReturnAst> {
        let typed = match (&self.peek().tok, &self.peek_at(1).tok) {
            (Tok::Ident(s), Tok::Punct("(")) | (Tok::Ident(s), Tok::Ident(_)) => {
                DType::from_name(s).is_some()
            }
            _ => false,
        };
        let ty = if typed { Some(self.type_ast()?) } else { None };
        let name = self.ident("a result name")?;
        Ok(ReturnAst { ty, name })
    }

    fn stmt(&mut self) -> PResult<StmtAst> {
        // The regions around the statement count as levels of nesting.
        self.depth = self.nesting;
        let start = self.peek().span;
        // `(A, B) = f(...)`, `(A, B) = for ...`, `() = if ...`; a def may
        // return nothing, so a call may bind `()` too.
        if self.is("(") {
            self.bump();
            let mut results = Vec::new();
            self.comma_list(|p| {
                results.push(p.ident("a result name")?);
                Ok(())
            })?;
            self.expect(")")?;
            self.expect("=")?;
            if self.at_region() {
                return self.region(results, start);
            }
            return self.call_rest(results, start);
        }
        let lhs = self.ident("a statement")?;
        if self.is("=") && matches!(&self.peek_at(1).tok, Tok::Ident(k) if k == "for" || k == "if")
        {
            self.bump();
            return self.region(vec![lhs], start);
        }
        // `X = f(...)` is a call (the checker turns it into a rank-0
        // statement when `f` is no def: `b = exp(a)`); `b = a`, `C +=!
        // A(k)` and `v min=! X(i)` write a rank-0 tensor, as TC writes them.
        let applied = matches!(self.peek_at(1).tok, Tok::Ident(_))
            && matches!(self.peek_at(2).tok, Tok::Punct("("))
            && !self.peek_at(2).line_start;
        if self.is("=") && applied {
            let at = self.pos;
            self.bump();
            let call = self.call_rest(vec![lhs.clone()], start)?;
            // `b = A(0) + A(1)` goes on after what looked like a call: it
            // is a rank-0 statement.
            let ended = matches!(self.toks[self.pos - 1].tok, Tok::Punct(";"));
            if ended || self.peek().line_start || self.is("}") {
                return Ok(call);
            }
            self.pos = at;
        }
        let mut indices = Vec::new();
        if self.is("(") {
            self.bump();
            self.comma_list(|p| {
                match &p.peek().tok {
                    Tok::Ident(_) => indices.push(p.ident("an iterator")?),
                    _ => return Err(p.unexpected("an iterator name").with_help(
                        "the left side is indexed by iterator names only; put expressions on the right",
                    )),
                }
                Ok(())
            })?;
            if !self.is(")") && self.binop().is_some() {
                return Err(self.unexpected("`,` or `)`").with_help(
                    "the left side is indexed by iterator names only; put expressions on the right",
                ));
            }
            self.expect(")")?;
        } else if !self.at_reduction() {
            return Err(self.unexpected("`(` after the tensor name").with_help(
                "statements are `T(i, j) = ...`, `T(i) +=! ...`, `t = ...` for a rank-0 `t`, or calls `T = f(...)`",
            ));
        }
        let (op, init, op_span) = self.reduction()?;
        let body = self.expr()?;
        // TC writes `<=>` after the `where` clauses; before them reads as
        // well.
        let mut equiv = self.equiv()?;
        let mut wheres = Vec::new();
        if self.is_ident("where") {
            self.bump();
            loop {
                wheres.push(self.where_clause()?);
                if !self.eat(",") {
                    break;
                }
            }
        }
        if equiv.is_none() {
            equiv = self.equiv()?;
        }
        self.eat(";");
        let span = start.to(Span::new(self.prev_end(), self.prev_end()));
        Ok(StmtAst::Comp(CompAst {
            lhs,
            indices,
            op,
            init,
            op_span,
            body,
            wheres,
            equiv,
            span,
        }))
    }

    /// `<=> f(args)`, if the statement has one.
    fn equiv(&mut self) -> PResult<Option<EquivAst>> {
        if !self.is("<=>") {
            return Ok(None);
        }
        let start = self.bump().span;
        let callee = self
            .ident("the def the statement is equivalent to")
            .map_err(|e| e.with_help("TC's annotation: `... <=> matmul(A(i,k), B(k,j))`"))?;
        self.expect("(")?;
        let mut args = Vec::new();
        self.comma_list(|p| {
            args.push(p.expr()?);
            Ok(())
        })?;
        let end = self.expect(")")?;
        Ok(Some(EquivAst {
            callee,
            args,
            span: start.to(end),
        }))
    }

    fn call_rest(&mut self, results: Vec<Ident>, start: Span) -> PResult<StmtAst> {
        let callee = self.ident("the name of a def to call")?;
        self.expect("(").map_err(|e| {
            e.with_help("a statement `X = ...` calls a def: `X = f(A, B)`; to define elements write `X(i) = ...`")
        })?;
        let mut args = Vec::new();
        self.comma_list(|p| {
            args.push(p.expr()?);
            Ok(())
        })?;
        self.expect(")")?;
        self.eat(";");
        let span = start.to(Span::new(self.prev_end(), self.prev_end()));
        Ok(StmtAst::Call(CallAst {
            results,
            callee,
            args,
            span,
        }))
    }

    /// Whether the next tokens are `=` or a reduction operator.
    fn at_reduction(&self) -> bool {
        self.reduction_at(0)
    }

    /// Whether the tokens `k` ahead are `=` or a reduction operator.
    fn reduction_at(&self, k: usize) -> bool {
        match &self.peek_at(k).tok {
            Tok::Punct(p) => ["=", "+=", "*=", "+=!", "*=!"].contains(p),
            Tok::Ident(s) => {
                (s == "min" || s == "max") && matches!(self.peek_at(k + 1).tok, Tok::Punct("="))
            }
            _ => false,
        }
    }

    /// Whether the statement starting here is a `yield`: the keyword, unless
    /// the statement writes a tensor named `yield` (`yield(i) = ...`, `yield
    /// = f(x)`).
    fn at_yield(&self) -> bool {
        if !self.is_ident("yield") {
            return false;
        }
        if self.reduction_at(1) {
            return false;
        }
        if !matches!(self.peek_at(1).tok, Tok::Punct("(")) {
            return true;
        }
        // `yield (a, b)` or a left side `yield(i, j) op ...`: both are a
        // flat list of names, so the first `)` closes it.
        let mut k = 2;
        loop {
            match &self.peek_at(k).tok {
                Tok::Punct(")") => return !self.reduction_at(k + 1),
                Tok::Ident(_) | Tok::Punct(",") => k += 1,
                _ => return true,
            }
        }
    }

    /// Whether a region starts here (right after a statement's `=`).
    fn at_region(&self) -> bool {
        self.is_ident("for") || self.is_ident("if")
    }

    /// Parses a region after `results =`. On an error, skips the rest of
    /// the region (its blocks whole) so that the enclosing block goes on at
    /// the statement after it.
    fn region(&mut self, results: Vec<Ident>, start: Span) -> PResult<StmtAst> {
        // A region's body is one level deeper than the region, and its
        // statements' expressions deeper still: leave them a level at least.
        let r = if self.nesting + 1 >= MAX_DEPTH {
            Err(Diagnostic::error(
                format!("regions nested more than {} levels deep", MAX_DEPTH - 1),
                self.peek().span,
            )
            .with_help(format!(
                "regions and the expressions inside them share a limit of {MAX_DEPTH} levels; move inner regions into a def of their own and call it"
            )))
        } else if self.is_ident("for") {
            self.loop_rest(results, start)
        } else {
            self.if_rest(results, start)
        };
        if r.is_err() {
            self.skip_region();
        }
        r
    }

    /// `for k [in 0:COUNT] [while COND] carry (...) { ... }`, at `for`.
    fn loop_rest(&mut self, results: Vec<Ident>, start: Span) -> PResult<StmtAst> {
        let keyword = self.bump().span;
        let index = self.ident("the loop's index name")?;
        let mut count = None;
        if self.is_ident("in") {
            self.bump();
            let lo = self.binary(1)?;
            if lo.kind != ExprKind::Int(0) {
                return Err(Diagnostic::error("a loop counts from 0", lo.span)
                    .with_label("expected `0` here")
                    .with_help("write `in 0:COUNT` and shift the index where the body uses it"));
            }
            self.expect(":")
                .map_err(|e| e.with_help("a counted loop is written `for k in 0:COUNT`"))?;
            count = Some(self.expr()?);
        }
        let mut cond = None;
        if self.is_ident("while") {
            self.bump();
            cond = Some(self.expr()?);
        }
        if count.is_none() && cond.is_none() {
            return Err(self.unexpected("`in 0:COUNT` or `while COND`").with_help(
                "a loop runs a number of times (`for k in 0:N`), while a condition holds (`for k while c()`), or both",
            ));
        }
        if !self.is_ident("carry") {
            return Err(self.unexpected("`carry`").with_help(
                "a loop lists the tensors it carries, `carry (float(N) x = x0)`, or `carry ()`",
            ));
        }
        self.bump();
        self.expect("(")?;
        let mut carried = Vec::new();
        self.comma_list(|p| {
            let ty = p.type_ast()?;
            let param = p.ident("the carried tensor's name")?;
            p.expect("=").map_err(|e| {
                e.with_help("a carried tensor starts from a tensor defined before the loop: `float(N) x = x0`")
            })?;
            let init = p.ident("the carried tensor's initial value")?;
            carried.push(CarriedAst { ty, param, init });
            Ok(())
        })?;
        self.expect(")")?;
        let body = self.block(keyword, "the body of this `for`")?;
        Ok(StmtAst::Loop(LoopAst {
            results,
            keyword,
            index,
            count,
            cond,
            carried,
            body,
            span: start.to(Span::new(self.prev_end(), self.prev_end())),
        }))
    }

    /// `if COND { ... } else { ... }`, at `if`.
    fn if_rest(&mut self, results: Vec<Ident>, start: Span) -> PResult<StmtAst> {
        let keyword = self.bump().span;
        let cond = self.expr()?;
        let then_body = self.block(keyword, "the `then` block of this `if`")?;
        if !self.is_ident("else") {
            return Err(self.unexpected("`else`").with_help(
                "an `if` has both blocks: `if c { ...; yield a } else { ...; yield b }`",
            ));
        }
        self.bump();
        let else_body = self.block(keyword, "the `else` block of this `if`")?;
        Ok(StmtAst::If(IfAst {
            results,
            keyword,
            cond,
            then_body,
            else_body,
            span: start.to(Span::new(self.prev_end(), self.prev_end())),
        }))
    }

    /// A region's block, at its `{`: statements, then `yield` and `}`.
    /// `opener` is the region's keyword and `what` names the block, for
    /// messages. Problems inside the block are reported and recovered from
    /// here, so that the block is always consumed up to its `}`; only an
    /// unclosed block is an error of the region.
    fn block(&mut self, opener: Span, what: &str) -> PResult<BlockAst> {
        self.expect("{")?;
        let depth = self.depth;
        self.nesting += 1;
        let r = self.block_rest(opener, what);
        self.nesting -= 1;
        self.depth = depth;
        r
    }

    fn block_rest(&mut self, opener: Span, what: &str) -> PResult<BlockAst> {
        let mut stmts = Vec::new();
        loop {
            if self.is("}") {
                let close = self.bump().span;
                self.errs.push(
                    Diagnostic::error(format!("{what} does not end with `yield`"), close)
                        .with_label("expected `yield` before this `}`")
                        .with_help("a region's block ends with the tensors it gives: `yield x`, `yield (x, y)` or `yield ()`"),
                );
                return Ok(BlockAst {
                    stmts,
                    yields: Vec::new(),
                    yield_span: close,
                });
            }
            if self.peek().tok == Tok::Eof {
                return Err(Diagnostic::error(format!("{what} is not closed"), opener)
                    .with_label("this region")
                    .with_help("end the block with `yield` and `}`"));
            }
            if self.is_ident("def") && self.peek().line_start {
                return Err(Diagnostic::error(format!("{what} is not closed"), opener)
                    .with_label("this region")
                    .with_extra(self.peek().span, "the next def starts here")
                    .with_help("end the block with `yield` and `}`"));
            }
            if self.at_yield() {
                let start = self.bump().span;
                let yields = match self.names("a yielded tensor") {
                    Ok(y) => y,
                    Err(e) => {
                        self.errs.push(e);
                        self.close_block();
                        return Ok(BlockAst {
                            stmts,
                            yields: Vec::new(),
                            yield_span: start,
                        });
                    }
                };
                let yield_span = start.to(Span::new(self.prev_end(), self.prev_end()));
                self.eat(";");
                if !self.is("}") {
                    self.errs.push(
                        self.unexpected("`}`")
                            .with_help("`yield` is the last statement of a block"),
                    );
                }
                self.close_block();
                return Ok(BlockAst {
                    stmts,
                    yields,
                    yield_span,
                });
            }
            let before = self.pos;
            match self.stmt() {
                Ok(s) => stmts.push(s),
                Err(e) => {
                    self.errs.push(e);
                    self.skip_stmt(before);
                }
            }
        }
    }

    /// `NAME` or `(NAME, ...)`, possibly `()`: a region's results or yields.
    fn names(&mut self, what: &str) -> PResult<Vec<Ident>> {
        if !self.is("(") {
            return Ok(vec![self.ident(what)?]);
        }
        self.bump();
        let mut out = Vec::new();
        self.comma_list(|p| {
            out.push(p.ident(what)?);
            Ok(())
        })?;
        self.expect(")")?;
        Ok(out)
    }

    /// Skips to the `}` that closes the current block, over whole inner
    /// blocks, and consumes it (or stops at the end of the file).
    fn close_block(&mut self) {
        let mut depth = 0usize;
        while self.peek().tok != Tok::Eof {
            if self.is("}") {
                if depth == 0 {
                    self.bump();
                    return;
                }
                depth -= 1;
            } else if self.is("{") {
                depth += 1;
            }
            self.bump();
        }
    }

    /// Skips what is left of a region that failed to parse: up to the next
    /// statement or the end of the enclosing block, over whole blocks (the
    /// region's own, and those of regions inside it).
    fn skip_region(&mut self) {
        let mut depth = 0usize;
        while self.peek().tok != Tok::Eof {
            let t = self.peek();
            let next_stmt = t.line_start && matches!(t.tok, Tok::Ident(_) | Tok::Punct("("));
            if depth == 0 && (self.is("}") || next_stmt) {
                return;
            }
            if self.is("{") {
                depth += 1;
            } else if self.is("}") {
                depth -= 1;
            }
            self.bump();
        }
    }

    fn reduction(&mut self) -> PResult<(Reduction, bool, Span)> {
        let t = self.peek().clone();
        let (op, init) = match &t.tok {
            Tok::Punct("=") => (Reduction::Assign, false),
            Tok::Punct("+=") => (Reduction::Add, false),
            Tok::Punct("*=") => (Reduction::Mul, false),
            Tok::Punct("+=!") => (Reduction::Add, true),
            Tok::Punct("*=!") => (Reduction::Mul, true),
            Tok::Ident(s)
                if (s == "min" || s == "max") && matches!(self.peek_at(1).tok, Tok::Punct("=")) =>
            {
                self.bump();
                let op = if s == "min" {
                    Reduction::Min
                } else {
                    Reduction::Max
                };
                let eq = self.bump().span;
                let init = self.is("!") && self.peek().span.start == eq.end;
                let mut span = t.span.to(eq);
                if init {
                    span = span.to(self.bump().span);
                }
                return Ok((op, init, span));
            }
            _ => {
                return Err(self.unexpected("`=` or a reduction operator").with_help(
                    "operators: = += *= min= max= and the initializing +=! *=! min=! max=!",
                ))
            }
        };
        self.bump();
        Ok((op, init, t.span))
    }

    fn where_clause(&mut self) -> PResult<WhereAst> {
        if self.is_ident("exists") {
            self.bump();
            return Ok(WhereAst::Exists(self.expr()?));
        }
        let name = self.ident("`i in lo:hi`, `x = e` or `exists e`")?;
        if self.eat("=") {
            return Ok(WhereAst::Let {
                name,
                value: self.expr()?,
            });
        }
        if !self.is_ident("in") {
            return Err(self
                .unexpected("`in` or `=`")
                .with_help("where clauses: `i in lo:hi`, `x = e`, `exists e`"));
        }
        self.bump();
        let lo = self.binary(1)?;
        self.expect(":")
            .map_err(|e| e.with_help("ranges are half-open: `i in 0:N`"))?;
        let hi = self.binary(1)?;
        Ok(WhereAst::Range { iter: name, lo, hi })
    }

    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_DEPTH {
            let span = self.peek().span;
            return Err(Diagnostic::error(
                format!("expression nested more than {MAX_DEPTH} levels deep (each operator of a chain such as `a + b + c` counts as a level)"),
                span,
            )
            .with_help("split the expression with `where` lets or temporaries"));
        }
        self.depth += 1;
        Ok(())
    }

    fn expr(&mut self) -> PResult<ExprAst> {
        self.enter()?;
        let r = self.ternary();
        self.depth -= 1;
        r
    }

    fn ternary(&mut self) -> PResult<ExprAst> {
        let c = self.binary(1)?;
        if !self.is("?") {
            return Ok(c);
        }
        self.bump();
        let a = self.expr()?;
        self.expect(":")?;
        let b = self.expr()?;
        let span = c.span.to(b.span);
        Ok(ExprAst {
            kind: ExprKind::Select(Box::new(c), Box::new(a), Box::new(b)),
            span,
        })
    }

    fn binop(&self) -> Option<BinOp> {
        Some(match &self.peek().tok {
            Tok::Punct(p) => match *p {
                "+" => BinOp::Add,
                "-" => BinOp::Sub,
                "*" => BinOp::Mul,
                "/" => BinOp::Div,
                "%" => BinOp::Mod,
                "<" => BinOp::Lt,
                "<=" => BinOp::Le,
                ">" => BinOp::Gt,
                ">=" => BinOp::Ge,
                "==" => BinOp::Eq,
                "!=" => BinOp::Ne,
                "&&" => BinOp::And,
                "||" => BinOp::Or,
                _ => return None,
            },
            _ => return None,
        })
    }

    /// Precedence climbing: parses operators binding at least `min`.
    fn binary(&mut self, min: u8) -> PResult<ExprAst> {
        let mut lhs = self.unary()?;
        // Each operator of a chain deepens the (left-leaning) tree by one, so
        // the chain counts against the depth limit until it ends.
        let saved = self.depth;
        let result = loop {
            let Some(op) = self.binop() else {
                break Ok(lhs);
            };
            let prec = op.precedence();
            if prec < min {
                break Ok(lhs);
            }
            self.bump();
            if let Err(e) = self.enter() {
                break Err(e);
            }
            let rhs = match self.binary(prec + 1) {
                Ok(r) => r,
                Err(e) => break Err(e),
            };
            let span = lhs.span.to(rhs.span);
            lhs = ExprAst {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        };
        self.depth = saved;
        result
    }

    fn unary(&mut self) -> PResult<ExprAst> {
        let op = if self.is("-") {
            Some(UnOp::Neg)
        } else if self.is("!") {
            Some(UnOp::Not)
        } else {
            None
        };
        match op {
            Some(op) => {
                let start = self.bump().span;
                self.enter()?;
                let a = self.unary();
                self.depth -= 1;
                let a = a?;
                let span = start.to(a.span);
                Ok(ExprAst {
                    kind: ExprKind::Unary(op, Box::new(a)),
                    span,
                })
            }
            None => self.primary(),
        }
    }

    fn primary(&mut self) -> PResult<ExprAst> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Int(v) => {
                self.bump();
                Ok(ExprAst {
                    kind: ExprKind::Int(v),
                    span: t.span,
                })
            }
            Tok::Float(v) => {
                self.bump();
                Ok(ExprAst {
                    kind: ExprKind::Float(v),
                    span: t.span,
                })
            }
            Tok::Punct("(") => {
                let open = self.bump().span;
                let e = self.expr()?;
                self.expect(")")
                    .map_err(|d| d.with_extra(open, "unclosed `(`"))?;
                Ok(e)
            }
            Tok::Ident(name) => {
                self.bump();
                if name == "true" || name == "false" {
                    return Ok(ExprAst {
                        kind: ExprKind::Bool(name == "true"),
                        span: t.span,
                    });
                }
                let id = Ident { name, span: t.span };
                // A `(` that starts a line starts the next statement
                // (`(P, Q) = g(X)`), not an application of this name.
                if self.is("(") && !self.peek().line_start {
                    self.bump();
                    let mut args = Vec::new();
                    self.comma_list(|p| {
                        args.push(p.expr()?);
                        Ok(())
                    })?;
                    let end = self
                        .expect(")")
                        .map_err(|d| d.with_extra(id.span, "this `(` is not closed"))?;
                    let span = id.span.to(end);
                    return Ok(ExprAst {
                        kind: ExprKind::Apply(id, args),
                        span,
                    });
                }
                if self.is(".") {
                    self.bump();
                    let d = self.peek().clone();
                    return match d.tok {
                        Tok::Int(v) => {
                            self.bump();
                            let span = id.span.to(d.span);
                            Ok(ExprAst {
                                kind: ExprKind::Dim(id, v),
                                span,
                            })
                        }
                        _ => Err(self
                            .unexpected("a dimension number after `.`")
                            .with_help("`T.1` is the size of dimension 1 of `T`")),
                    };
                }
                Ok(ExprAst {
                    kind: ExprKind::Name(id.name),
                    span: id.span,
                })
            }
            _ => Err(self.unexpected("an expression")),
        }
    }
}
