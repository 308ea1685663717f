//! The frontend: a Python def, traced at its arguments' shapes, becomes an
//! imperative [`Graph`].
//!
//! Requires source that Ruff's parser accepts. Python names are bound to
//! graph values as statements run; a name rebound inside a loop becomes a
//! loop-carried value and one rebound inside a branch a branch output,
//! exactly as TorchScript's emitter does, while mutation never rebinds a
//! name (conversion handles it). Integer and boolean arguments and sizes
//! are known while tracing (a def is specialized on them, as on shapes), so
//! a loop's count and a branch on them are known; `float` arguments stay
//! parameters. Calls of other defs of the file are inlined. Everything
//! outside the subset (README: "The imperative subset") is an error that
//! names the construct and where it is, never ignored.

mod expr;
mod index;
mod stmt;
mod torch;
mod value;

use std::collections::HashMap;

use ruff_python_ast::{self as ast, Expr as PyExpr, Stmt as PyStmt};
use ruff_text_size::Ranged;

use crate::error::{Error, Result};
use crate::graph::{BlockId, Graph, Span, Ty, ValueId, ROOT};
use ir::DType;

pub use value::Val;

/// What the caller passes for one parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Tensor {
        dtype: DType,
        shape: Vec<i64>,
    },
    Int(i64),
    Bool(bool),
    /// A `float`, passed at run time (the def is not specialized on it).
    Float,
}

/// A parsed Python file: its defs by name, in order.
#[derive(Debug)]
pub struct Module {
    pub source: String,
    body: Vec<PyStmt>,
}

impl Module {
    /// Parses `source`; a syntax error is located.
    pub fn parse(source: &str) -> Result<Module> {
        let parsed = ruff_python_parser::parse_module(source).map_err(|e| {
            Error::new(
                span_of(e.location),
                format!("Python syntax error: {}", e.error),
            )
        })?;
        let body: Vec<PyStmt> = parsed.into_syntax().body.into_iter().collect();
        for s in &body {
            match s {
                PyStmt::FunctionDef(_) | PyStmt::Import(_) | PyStmt::ImportFrom(_) => {}
                PyStmt::Expr(e) if e.value.is_string_literal_expr() => {}
                other => {
                    return Err(Error::new(
                        span(other),
                        "only `import` lines and `def`s are allowed at the top level of the file",
                    ))
                }
            }
        }
        Ok(Module {
            source: source.to_string(),
            body,
        })
    }

    /// The names of the file's defs, in order.
    pub fn defs(&self) -> Vec<&str> {
        self.body
            .iter()
            .filter_map(|s| match s {
                PyStmt::FunctionDef(f) => Some(f.name.as_str()),
                _ => None,
            })
            .collect()
    }

    fn def(&self, name: &str) -> Option<&ast::StmtFunctionDef> {
        self.body.iter().find_map(|s| match s {
            PyStmt::FunctionDef(f) if f.name.as_str() == name => Some(f),
            _ => None,
        })
    }

    /// Each parameter of def `name` with its annotation's reading, if any:
    /// `"float32[B, N]"` gives the element type and dimension names.
    pub fn signature(&self, name: &str) -> Result<Vec<(String, Option<Annotation>)>> {
        let f = self.def(name).ok_or_else(|| {
            Error::new(
                Span::default(),
                format!("no def named `{name}` in the file"),
            )
        })?;
        check_parameters(f)?;
        f.parameters
            .args
            .iter()
            .map(|p| {
                let ann = p.parameter.annotation().map(annotation).transpose()?;
                Ok((p.parameter.name.as_str().to_string(), ann))
            })
            .collect()
    }
}

/// A parameter's annotation.
#[derive(Clone, Debug, PartialEq)]
pub enum Annotation {
    /// A tensor's element type and dimensions (a size symbol or a number).
    Tensor {
        dtype: DType,
        dims: Vec<Dim>,
    },
    Int,
    Float,
    Bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Dim {
    Symbol(String),
    Fixed(i64),
}

fn annotation(e: &PyExpr) -> Result<Annotation> {
    match e {
        PyExpr::Name(n) => match n.id.as_str() {
            "int" => Ok(Annotation::Int),
            "float" => Ok(Annotation::Float),
            "bool" => Ok(Annotation::Bool),
            other => Err(Error::new(
                span(e),
                format!("annotation `{other}`: write `int`, `float`, `bool`, or a tensor type as a string such as \"float32[N, 4]\""),
            )),
        },
        PyExpr::StringLiteral(s) => {
            let text = s.value.to_str();
            parse_tensor_type(text).ok_or_else(|| {
                Error::new(
                    span(e),
                    format!("annotation \"{text}\" is no tensor type: write the element type and dimensions, such as \"float32[B, N, 4]\""),
                )
            })
        }
        _ => Err(Error::new(
            span(e),
            "annotations are `int`, `float`, `bool`, or a tensor type as a string such as \"float32[N, 4]\"",
        )),
    }
}

fn parse_tensor_type(text: &str) -> Option<Annotation> {
    let text = text.trim();
    let (dtype, rest) = text.split_once('[')?;
    let dtype = DType::from_name(dtype.trim())?;
    let dims = rest.strip_suffix(']')?;
    let dims = if dims.trim().is_empty() {
        Vec::new()
    } else {
        dims.split(',')
            .map(|d| {
                let d = d.trim();
                if let Ok(v) = d.parse::<i64>() {
                    (v >= 0).then_some(Dim::Fixed(v))
                } else if !d.is_empty()
                    && d.chars().all(|c| c.is_alphanumeric() || c == '_')
                    && !d.starts_with(|c: char| c.is_ascii_digit())
                {
                    Some(Dim::Symbol(d.to_string()))
                } else {
                    None
                }
            })
            .collect::<Option<Vec<Dim>>>()?
    };
    Some(Annotation::Tensor { dtype, dims })
}

fn check_parameters(f: &ast::StmtFunctionDef) -> Result<()> {
    let p = &f.parameters;
    if let Some(x) = p.posonlyargs.first().or(p.kwonlyargs.first()) {
        return Err(Error::new(
            span(x),
            "positional-only and keyword-only parameters are not in the subset",
        ));
    }
    if let Some(x) = p.vararg.as_deref().or(p.kwarg.as_deref()) {
        return Err(Error::new(
            span(x),
            "`*args` and `**kwargs` are not in the subset",
        ));
    }
    if let Some(x) = p.args.iter().find(|a| a.default.is_some()) {
        return Err(Error::new(
            span(x),
            "default parameter values are not in the subset",
        ));
    }
    Ok(())
}

pub(crate) fn span_of(r: ruff_text_size::TextRange) -> Span {
    Span {
        start: r.start().into(),
        end: r.end().into(),
    }
}

pub(crate) fn span(node: &impl Ranged) -> Span {
    span_of(node.range())
}

/// How deeply expressions and calls of defs may nest while tracing (a
/// guard against overflowing the stack on hostile input).
const MAX_DEPTH: usize = 200;

/// Traces def `name` of `module` at `args` (one per parameter, in order).
pub fn trace(module: &Module, name: &str, args: &[Arg]) -> Result<Graph> {
    let f = module.def(name).ok_or_else(|| {
        Error::new(
            Span::default(),
            format!("no def named `{name}` in the file"),
        )
    })?;
    check_parameters(f)?;
    let params = &f.parameters.args;
    if params.len() != args.len() {
        return Err(Error::new(
            span(&*f.parameters),
            format!(
                "`{name}` takes {} arguments, {} were given",
                params.len(),
                args.len()
            ),
        ));
    }
    let mut t = Tracer {
        module,
        g: Graph::new(name),
        block: ROOT,
        env: HashMap::new(),
        depth: 0,
        returned: None,
        mutated_params: Default::default(),
    };
    for (p, a) in params.iter().zip(args) {
        let pname = p.parameter.name.as_str();
        let at = span(p);
        if let Some(ann) = p.parameter.annotation() {
            check_annotation(&annotation(ann)?, a, pname, at)?;
        }
        let val = match a {
            Arg::Tensor { dtype, shape } => {
                Val::Value(t.g.add_param(ROOT, pname, Ty::tensor(*dtype, shape.clone())))
            }
            Arg::Float => {
                let v = t.g.add_param(ROOT, pname, Ty::Float);
                t.g.scalar_params.push(v);
                Val::Value(v)
            }
            Arg::Int(v) => t.constant(ir::Value::Int(*v), at),
            Arg::Bool(v) => t.constant(ir::Value::Bool(*v), at),
        };
        t.env.insert(pname.to_string(), val);
    }
    t.body(&f.body, true)?;
    let Some(result) = t.returned.take() else {
        return Err(Error::new(
            span(f),
            format!("`{name}` returns nothing: return a tensor or a tuple of tensors"),
        ));
    };
    let outs = match result {
        Val::Tuple(items) => items,
        one => vec![one],
    };
    let mut returns = Vec::new();
    for v in outs {
        let id = t.tensor_result(v, span(f))?;
        returns.push(id);
    }
    t.g.blocks[ROOT].returns = returns;
    Ok(t.g)
}

fn check_annotation(ann: &Annotation, arg: &Arg, name: &str, at: Span) -> Result<()> {
    let ok = match (ann, arg) {
        (Annotation::Tensor { dtype, dims }, Arg::Tensor { dtype: d, shape }) => {
            if dtype != d {
                return Err(Error::new(
                    at,
                    format!("`{name}` is annotated {dtype}, but a {d} tensor was passed"),
                ));
            }
            if dims.len() != shape.len() {
                return Err(Error::new(
                    at,
                    format!("`{name}` is annotated with {} dimensions, but the tensor passed has shape {shape:?}", dims.len()),
                ));
            }
            for (d, &n) in dims.iter().zip(shape) {
                if let Dim::Fixed(v) = d {
                    if *v != n {
                        return Err(Error::new(
                            at,
                            format!("`{name}` is annotated with a dimension {v}, but the tensor passed has shape {shape:?}"),
                        ));
                    }
                }
            }
            true
        }
        (Annotation::Int, Arg::Int(_))
        | (Annotation::Bool, Arg::Bool(_))
        | (Annotation::Float, Arg::Float) => true,
        (Annotation::Float, Arg::Int(_)) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            at,
            format!("`{name}` is annotated {ann:?}, but {arg:?} was passed"),
        ))
    }
}

/// The state of tracing one def (and the defs it calls, inlined).
pub(crate) struct Tracer<'m> {
    module: &'m Module,
    pub g: Graph,
    /// The block statements append to.
    pub block: BlockId,
    /// Python names in scope.
    pub env: HashMap<String, Val>,
    /// Nesting of expressions and calls, against [`MAX_DEPTH`].
    depth: usize,
    /// What the def's `return` gave.
    returned: Option<Val>,
    /// Loop-carried parameters updated in place (checked when their loop
    /// ends: their storage must be their own).
    mutated_params: std::collections::HashSet<ValueId>,
}

impl Tracer<'_> {
    /// A value of `v` as a graph tensor to return; a scalar is made a 0-d
    /// tensor, as PyTorch returns only tensors here.
    fn tensor_result(&mut self, v: Val, at: Span) -> Result<ValueId> {
        match v {
            Val::Value(id) if matches!(self.g.ty(id), Ty::Tensor { .. }) => Ok(id),
            Val::Value(id) => Ok(self.scalar_tensor(id, at)),
            other => Err(Error::new(
                at,
                format!("a def returns tensors, not {}", other.describe()),
            )),
        }
    }

    fn enter(&mut self, at: Span) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::new(
                at,
                format!("expressions and calls nest more than {MAX_DEPTH} deep"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }
}

/// `a / b` rounded up, for `a >= 0` and `b > 0`.
pub(crate) fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}
