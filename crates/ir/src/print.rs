//! The printer: IR back to TC source.
//!
//! The output is TC that the `tc` crate parses back to the same IR (tested
//! on every example and prelude def, and by property tests). To make that
//! hold, the printer is explicit where the checker would otherwise infer:
//! every iterator range is written as a `where` clause, outputs are written
//! with their types and shapes, and a literal (or a literal-only expression)
//! is wrapped in a conversion such as `float64(2.0)` whenever the checker's
//! literal typing would not give it its type in that position.

use std::collections::HashSet;
use std::fmt::Write;

use crate::{
    CallArg, Comprehension, DType, Def, Expr, Param, Program, Stmt, TensorRole, UnOp, Value,
};

/// Prints a whole program, defs separated by blank lines.
pub fn print_program(p: &Program) -> String {
    let mut out = String::new();
    for (i, d) in p.defs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&print_def(p, d));
    }
    out
}

/// Prints one def. `p` supplies callee signatures for call statements.
pub fn print_def(p: &Program, d: &Def) -> String {
    let mut out = String::new();
    let params: Vec<String> = d
        .params
        .iter()
        .map(|param| match param {
            Param::Scalar { name, dtype } => format!("{dtype} {name}"),
            Param::Tensor(t) => tensor_type(d, t),
        })
        .collect();
    let outputs: Vec<String> = d
        .outputs
        .iter()
        .map(|o| match d.tensor(o) {
            Some(t) if t.role == TensorRole::InOut => o.clone(),
            _ => tensor_type(d, o),
        })
        .collect();
    let _ = writeln!(
        out,
        "def {}({}) -> ({}) {{",
        d.name,
        params.join(", "),
        outputs.join(", ")
    );
    let mut known: HashSet<&str> = d
        .tensors
        .iter()
        .filter(|t| t.role != TensorRole::Temp)
        .map(|t| t.name.as_str())
        .collect();
    print_stmts(p, d, &d.stmts, 1, &mut known, &mut out);
    out.push_str("}\n");
    out
}

fn tensor_type(d: &Def, name: &str) -> String {
    match d.tensor(name) {
        Some(t) if t.shape.is_empty() => format!("{}() {name}", t.dtype),
        Some(t) => {
            let dims: Vec<String> = t.shape.iter().map(|s| s.to_string()).collect();
            format!("{}({}) {name}", t.dtype, dims.join(", "))
        }
        None => name.to_string(),
    }
}

/// Prints one comprehension on one line. `lhs_type` is the left side's type
/// if the checker will know it before reading the body (a parameter, a typed
/// output, or a tensor defined by an earlier statement).
pub fn print_comprehension(d: &Def, c: &Comprehension, lhs_type: Option<DType>) -> String {
    let p = ExprPrinter {
        def: d,
        comp: Some(c),
    };
    let mut s = format!(
        "{}({}) {}{} {}",
        c.tensor,
        c.indices.join(", "),
        c.op.symbol(),
        if c.init { "!" } else { "" },
        p.print(&c.body, lhs_type, 0)
    );
    let mut clauses: Vec<String> = c
        .ranges
        .iter()
        .map(|r| format!("{} in {}:{}", r.name, r.lo, r.hi))
        .collect();
    for (n, v) in &c.lets {
        clauses.push(format!("{n} = {}", p.print(v, None, 0)));
    }
    for e in &c.exists {
        clauses.push(format!("exists {}", p.print(e, None, 0)));
    }
    if !clauses.is_empty() {
        s.push_str(" where ");
        s.push_str(&clauses.join(", "));
    }
    s
}

/// Prints an expression with no typing context (for messages).
pub fn print_expr(d: &Def, c: Option<&Comprehension>, e: &Expr) -> String {
    ExprPrinter { def: d, comp: c }.print(e, None, 0)
}

/// The type an unadorned literal of this kind gets without context.
pub fn default_literal_type(v: &Value) -> DType {
    match v {
        Value::Int(_) => DType::I32,
        Value::Float(_) => DType::F32,
        Value::Bool(_) => DType::Bool,
    }
}

/// Whether `e` is built from literals only, so that its type comes from its
/// context (the checker's "weak" typing). Must agree with the checker.
pub fn is_weak(e: &Expr) -> bool {
    match e {
        Expr::Lit(..) => true,
        Expr::Unary(UnOp::Neg, a) => is_weak(a),
        Expr::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => {
            is_weak(a) && is_weak(b)
        }
        Expr::Select(_, a, b) => is_weak(a) && is_weak(b),
        Expr::Call(_, args) => args.iter().all(is_weak),
        _ => false,
    }
}

fn weak_default(e: &Expr) -> DType {
    match e {
        Expr::Lit(v, _) => default_literal_type(v),
        Expr::Unary(_, a) => weak_default(a),
        Expr::Binary(_, a, b) | Expr::Select(_, a, b) => {
            DType::promote(weak_default(a), weak_default(b))
        }
        Expr::Call(_, args) => args
            .iter()
            .map(weak_default)
            .fold(DType::Bool, DType::promote),
        _ => DType::I64,
    }
}

struct ExprPrinter<'a> {
    def: &'a Def,
    comp: Option<&'a Comprehension>,
}

const UNARY_PREC: u8 = 7;

impl ExprPrinter<'_> {
    fn ty(&self, e: &Expr) -> DType {
        self.def.type_of(self.comp, e)
    }

    /// `expected`: the type the checker would give a weak expression here.
    /// `prec`: the binding strength of the surrounding operator.
    fn print(&self, e: &Expr, expected: Option<DType>, prec: u8) -> String {
        if is_weak(e) {
            let t = self.ty(e);
            let natural = expected.unwrap_or_else(|| weak_default(e));
            if t != natural {
                return format!("{t}({})", self.print_inner(e, Some(t), 0));
            }
        }
        self.print_inner(e, expected, prec)
    }

    fn print_inner(&self, e: &Expr, expected: Option<DType>, prec: u8) -> String {
        let t = self.ty(e);
        let paren = |s: String, own: u8| if own < prec { format!("({s})") } else { s };
        match e {
            Expr::Lit(v, _) => {
                let s = match v {
                    Value::Int(i) => i.to_string(),
                    Value::Float(x) => float_literal(*x, t),
                    Value::Bool(b) => b.to_string(),
                };
                if s.starts_with('-') && prec > 0 {
                    format!("({s})")
                } else {
                    s
                }
            }
            Expr::Iter(n) | Expr::Sym(n) | Expr::Local(n) => n.clone(),
            Expr::Read(tensor, ix) => {
                let args: Vec<String> = ix
                    .iter()
                    .map(|x| self.print(x, Some(DType::I64), 0))
                    .collect();
                format!("{tensor}({})", args.join(", "))
            }
            Expr::Unary(op, a) => {
                let (sym, want) = match op {
                    UnOp::Neg => ("-", expected.or(Some(t))),
                    UnOp::Not => ("!", Some(DType::Bool)),
                };
                paren(
                    format!("{sym}{}", self.print(a, want, UNARY_PREC)),
                    UNARY_PREC,
                )
            }
            Expr::Binary(op, a, b) => {
                let own = op.precedence();
                let want = if op.is_logical() {
                    Some(DType::Bool)
                } else if op.is_comparison() && is_weak(a) && is_weak(b) {
                    // Nothing outside a comparison types its operands: two
                    // literal-only operands default, so print their types.
                    None
                } else if op.is_comparison() {
                    Some(self.operand_type(a, b))
                } else {
                    Some(t)
                };
                // Left-associative: the right operand binds one level tighter.
                let s = format!(
                    "{} {} {}",
                    self.print(a, want, own),
                    op.symbol(),
                    self.print(b, want, own + 1)
                );
                paren(s, own)
            }
            Expr::Select(c, a, b) => {
                let s = format!(
                    "{} ? {} : {}",
                    self.print(c, Some(DType::Bool), 1),
                    self.print(a, Some(t), 1),
                    self.print(b, Some(t), 0)
                );
                if prec > 0 {
                    format!("({s})")
                } else {
                    s
                }
            }
            Expr::Call(f, args) => {
                let args: Vec<String> = args.iter().map(|x| self.print(x, Some(t), 0)).collect();
                format!("{}({})", f.name(), args.join(", "))
            }
            // A conversion of a literal-only operand keeps the operand's own
            // type explicit: the checker would otherwise give the literal the
            // target type directly and drop the conversion.
            Expr::Cast(to, a) if is_weak(a) => {
                let at = self.ty(a);
                format!("{to}({at}({}))", self.print_inner(a, Some(at), 0))
            }
            Expr::Cast(to, a) => format!("{to}({})", self.print(a, None, 0)),
        }
    }

    /// The common type of a comparison's operands: a strong operand's type.
    fn operand_type(&self, a: &Expr, b: &Expr) -> DType {
        if is_weak(a) {
            self.ty(b)
        } else {
            self.ty(a)
        }
    }
}

/// Shortest text that reads back as the same value of type `t`.
fn float_literal(x: f64, t: DType) -> String {
    let s = if t == DType::F32 {
        format!("{:?}", x as f32)
    } else {
        format!("{x:?}")
    };
    if s.contains(['.', 'e', 'E', 'n', 'i']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// Prints `stmts` one per line at `depth` levels of indentation; `known`
/// holds the tensors whose types the checker knows before each statement.
fn print_stmts<'a>(
    p: &Program,
    d: &'a Def,
    stmts: &'a [Stmt],
    depth: usize,
    known: &mut HashSet<&'a str>,
    out: &mut String,
) {
    let pad = "  ".repeat(depth);
    for s in stmts {
        out.push_str(&pad);
        match s {
            Stmt::Comp(c) => {
                let expected = known
                    .contains(c.tensor.as_str())
                    .then(|| d.tensor(&c.tensor).map(|t| t.dtype).unwrap_or(DType::F32));
                out.push_str(&print_comprehension(d, c, expected));
                known.insert(&c.tensor);
            }
            Stmt::Call(call) => {
                let callee = p.def(&call.callee);
                let args: Vec<String> = call
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| match a {
                        CallArg::Tensor(t) => t.clone(),
                        CallArg::Scalar(e) => {
                            let want = callee.and_then(|c| match c.params.get(i) {
                                Some(Param::Scalar { dtype, .. }) => Some(*dtype),
                                _ => None,
                            });
                            ExprPrinter { def: d, comp: None }.print(e, want, 0)
                        }
                    })
                    .collect();
                let lhs = if call.results.len() == 1 {
                    call.results[0].clone()
                } else {
                    format!("({})", call.results.join(", "))
                };
                let _ = write!(out, "{lhs} = {}({})", call.callee, args.join(", "));
                for r in &call.results {
                    known.insert(r);
                }
            }
            Stmt::Loop(l) => {
                let scalar = ExprPrinter { def: d, comp: None };
                let _ = write!(out, "{} = for {}", tuple(&l.results), l.index);
                if let Some(n) = &l.count {
                    let _ = write!(out, " in 0:{}", scalar.print(n, Some(DType::I64), 0));
                }
                if let Some(c) = &l.cond {
                    let _ = write!(out, " while {}", scalar.print(c, Some(DType::Bool), 0));
                }
                let carried: Vec<String> = l
                    .carried
                    .iter()
                    .map(|c| format!("{} = {}", tensor_type(d, &c.param), c.init))
                    .collect();
                let _ = writeln!(out, " carry ({}) {{", carried.join(", "));
                known.extend(l.carried.iter().map(|c| c.param.as_str()));
                print_block(p, d, &l.body, &l.yields, depth, known, out);
                known.extend(l.results.iter().map(String::as_str));
            }
            Stmt::If(b) => {
                let scalar = ExprPrinter { def: d, comp: None };
                let _ = writeln!(
                    out,
                    "{} = if {} {{",
                    tuple(&b.results),
                    scalar.print(&b.cond, Some(DType::Bool), 0)
                );
                print_block(p, d, &b.then_body, &b.then_yields, depth, known, out);
                out.push_str(" else {\n");
                print_block(p, d, &b.else_body, &b.else_yields, depth, known, out);
                known.extend(b.results.iter().map(String::as_str));
            }
        }
        out.push('\n');
    }
}

/// Prints a region's body, its `yield` and the closing brace (without a
/// newline after it).
fn print_block<'a>(
    p: &Program,
    d: &'a Def,
    stmts: &'a [Stmt],
    yields: &[String],
    depth: usize,
    known: &mut HashSet<&'a str>,
    out: &mut String,
) {
    print_stmts(p, d, stmts, depth + 1, known, out);
    let _ = writeln!(out, "{}yield {}", "  ".repeat(depth + 1), tuple(yields));
    let _ = write!(out, "{}}}", "  ".repeat(depth));
}

/// `a` for one name, `(a, b)` otherwise (`()` for none).
fn tuple(names: &[String]) -> String {
    if names.len() == 1 {
        names[0].clone()
    } else {
        format!("({})", names.join(", "))
    }
}
