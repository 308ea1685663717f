//! Running a def: argument checks, the environment, statements in order,
//! and calls of other defs.
//!
//! Every parameter must be passed, with the right kind, element type (in
//! real mode; mod-p tensors are residues of any type and take the
//! parameter's) and rank; sizes are bound from the arguments and checked
//! against every declared shape. Statements then run in order over an
//! environment of named tensors (parameters first, an in/out parameter as a
//! copy of the caller's tensor), and the outputs are returned in order.

use std::collections::HashMap;

use ir::{CallArg, CallStmt, Def, Param, Program, Stmt};

use crate::bind::{bind_sizes, shape_of};
use crate::compile::Scope;
use crate::error::RunError;
use crate::exec::{exec_comp, Bindings};
use crate::progress::Reporter;
use crate::tensors::{admit, show_tuple};
use crate::{Arg, Mode};
use ir::arith;
use tensor::Tensor;

/// Calls may nest this deep (the checker rejects deeper nesting and
/// recursion; this keeps an unchecked program from overflowing the stack).
use ir::MAX_CALL_DEPTH;

/// Runs def `name` of `program`.
///
/// `args` maps parameter names to values: every parameter must be present
/// (the error names the missing one) and nothing else; tensor element types
/// (in [`Mode::Real`]) and ranks must match the signature (the error names
/// the tensor and both). `given_sizes` binds size symbols no argument
/// determines. Returns the outputs in `def.outputs` order as (name, tensor).
pub fn run(
    program: &Program,
    name: &str,
    args: &HashMap<String, Arg>,
    given_sizes: &HashMap<String, i64>,
    mode: Mode,
) -> Result<Vec<(String, Tensor)>, RunError> {
    run_reporting(program, name, args, given_sizes, mode, &Reporter::default())
}

/// [`run`], reporting the progress of long statements to `progress`.
pub fn run_reporting(
    program: &Program,
    name: &str,
    args: &HashMap<String, Arg>,
    given_sizes: &HashMap<String, i64>,
    mode: Mode,
    progress: &Reporter,
) -> Result<Vec<(String, Tensor)>, RunError> {
    let def = program
        .def(name)
        .ok_or_else(|| RunError::new(name, format!("no def named `{name}`")))?;
    run_def(program, def, args, given_sizes, mode, progress, 0)
}

fn run_def(
    program: &Program,
    def: &Def,
    args: &HashMap<String, Arg>,
    given: &HashMap<String, i64>,
    mode: Mode,
    progress: &Reporter,
    depth: usize,
) -> Result<Vec<(String, Tensor)>, RunError> {
    let err = |m: String| RunError::new(&def.name, m);
    if depth > MAX_CALL_DEPTH {
        return Err(err(format!(
            "calls are nested more than {MAX_CALL_DEPTH} deep"
        )));
    }
    let mut extra: Vec<&String> = args
        .keys()
        .filter(|k| !def.params.iter().any(|p| p.name() == *k))
        .collect();
    extra.sort();
    if let Some(x) = extra.first() {
        return Err(err(format!("`{x}` is not a parameter of `{}`", def.name)));
    }

    let mut env = HashMap::new();
    let mut scalars = HashMap::new();
    for p in &def.params {
        let arg = args
            .get(p.name())
            .ok_or_else(|| err(format!("missing argument `{}`", p.name())))?;
        match (p, arg) {
            (Param::Scalar { name, dtype }, Arg::Scalar(v)) => {
                let v = arith::convert_scalar(name, *dtype, *v, mode == Mode::Real).map_err(err)?;
                scalars.insert(name.clone(), v);
            }
            (Param::Tensor(name), Arg::Tensor(t)) => {
                let decl = def
                    .tensor(name)
                    .ok_or_else(|| err(format!("tensor parameter `{name}` has no declaration")))?;
                if t.shape().len() != decl.shape.len() {
                    return Err(err(format!(
                        "tensor `{name}` has rank {}, but `{}` declares rank {}",
                        t.shape().len(),
                        def.name,
                        decl.shape.len()
                    )));
                }
                if mode == Mode::Real && t.dtype() != decl.dtype {
                    return Err(err(format!(
                        "tensor `{name}` is {}, but `{}` declares {}",
                        t.dtype(),
                        def.name,
                        decl.dtype
                    )));
                }
                env.insert(name.clone(), admit(t, name, mode).map_err(err)?);
            }
            (Param::Scalar { name, .. }, Arg::Tensor(_)) => {
                return Err(err(format!(
                    "`{name}` is a scalar parameter, but a tensor was passed"
                )))
            }
            (Param::Tensor(name), Arg::Scalar(_)) => {
                return Err(err(format!(
                    "`{name}` is a tensor parameter, but a scalar was passed"
                )))
            }
        }
    }

    let sizes = bind_sizes(def, args, given)?;
    for s in def.size_symbols() {
        if !sizes.contains_key(&s) {
            return Err(err(format!(
                "size symbol `{s}` has no value: no argument determines it and none is given"
            )));
        }
    }
    for decl in def.tensor_params() {
        let want = shape_of(decl, &sizes).map_err(err)?;
        if let Some(t) = env.get(&decl.name) {
            if t.shape() != want.as_slice() {
                let declared: Vec<String> = decl.shape.iter().map(ToString::to_string).collect();
                return Err(err(format!(
                    "tensor `{}` has shape {}, but its declared shape {} is {} here",
                    decl.name,
                    show_tuple(t.shape()),
                    show_tuple(&declared),
                    show_tuple(&want)
                )));
            }
        }
    }

    let b = Bindings {
        def,
        scalars,
        sizes,
        mode,
        progress,
    };
    for (i, s) in def.stmts.iter().enumerate() {
        exec_stmt(program, &b, &mut env, s, i, depth)
            .map_err(|e| locate(e, |m| RunError::at(&def.name, i, m)))?;
    }
    def.outputs
        .iter()
        .map(|o| match env.get(o) {
            Some(t) => Ok((o.clone(), t.clone())),
            None => Err(err(format!("output `{o}` is never defined"))),
        })
        .collect()
}

/// Why a statement failed: a message for the enclosing statement to place,
/// or an error already placed (inside a call).
enum Failure {
    Message(String),
    Placed(RunError),
}

fn locate(f: Failure, at: impl FnOnce(String) -> RunError) -> RunError {
    match f {
        Failure::Message(m) => at(m),
        Failure::Placed(e) => e,
    }
}

/// Runs statement `s` (top-level statement `stmt` or inside it) over `env`.
fn exec_stmt(
    program: &Program,
    b: &Bindings,
    env: &mut HashMap<String, Tensor>,
    s: &Stmt,
    stmt: usize,
    depth: usize,
) -> Result<(), Failure> {
    match s {
        Stmt::Comp(c) => {
            let t = exec_comp(b, env, c, stmt).map_err(Failure::Message)?;
            env.insert(c.tensor.clone(), t);
        }
        Stmt::Call(call) => {
            for (name, t) in
                exec_call(program, b, env, call, stmt, depth).map_err(Failure::Placed)?
            {
                env.insert(name, t);
            }
        }
        Stmt::Loop(l) => exec_loop(program, b, env, l, stmt, depth)?,
        Stmt::If(br) => {
            let taken = match condition(b, env, &br.cond, stmt)? {
                true => (&br.then_body, &br.then_yields),
                false => (&br.else_body, &br.else_yields),
            };
            // The body's tensors live in a copy of the environment, so they
            // are gone after the branch, as the IR's scoping says.
            let mut inner = env.clone();
            exec_body(program, b, &mut inner, taken.0, stmt, depth, "the branch")?;
            for (r, y) in br.results.iter().zip(taken.1) {
                let t = yielded(&inner, y)?;
                env.insert(r.clone(), t);
            }
        }
    }
    Ok(())
}

/// Runs a loop region: the carried tensors start as its initial values,
/// each iteration runs the body in a fresh copy of the outer environment
/// (so a body's temporaries start from zeros every time, as a first
/// definition does) with the index bound, and the yields carry over.
fn exec_loop(
    program: &Program,
    b: &Bindings,
    env: &mut HashMap<String, Tensor>,
    l: &ir::LoopStmt,
    stmt: usize,
    depth: usize,
) -> Result<(), Failure> {
    let mut carried: Vec<Tensor> = l
        .carried
        .iter()
        .map(|c| yielded(env, &c.init))
        .collect::<Result<_, _>>()?;
    let count = match &l.count {
        Some(n) => Some(int_value(b, env, n, stmt)?),
        None => None,
    };
    let mut k: i64 = 0;
    loop {
        if count.is_some_and(|n| k >= n) {
            break;
        }
        let mut inner = env.clone();
        for (c, t) in l.carried.iter().zip(&carried) {
            inner.insert(c.param.clone(), t.clone());
        }
        let mut scalars = b.scalars.clone();
        scalars.insert(l.index.clone(), ir::Value::Int(k));
        let mut sizes = b.sizes.clone();
        sizes.insert(l.index.clone(), k);
        let body = Bindings {
            def: b.def,
            scalars,
            sizes,
            mode: b.mode,
            progress: b.progress,
        };
        if let Some(c) = &l.cond {
            if !condition(&body, &inner, c, stmt)? {
                break;
            }
        }
        let what = format!("iteration {k} of the loop");
        exec_body(program, &body, &mut inner, &l.body, stmt, depth, &what)?;
        carried = l
            .yields
            .iter()
            .map(|y| yielded(&inner, y))
            .collect::<Result<_, _>>()?;
        k += 1;
    }
    for (r, t) in l.results.iter().zip(carried) {
        env.insert(r.clone(), t);
    }
    Ok(())
}

/// Runs a region's body, naming the region in a failure's message.
fn exec_body(
    program: &Program,
    b: &Bindings,
    env: &mut HashMap<String, Tensor>,
    stmts: &[Stmt],
    stmt: usize,
    depth: usize,
    what: &str,
) -> Result<(), Failure> {
    for (i, s) in stmts.iter().enumerate() {
        exec_stmt(program, b, env, s, stmt, depth).map_err(|f| match f {
            Failure::Message(m) => Failure::Message(format!("in {what}, statement {}: {m}", i + 1)),
            placed => placed,
        })?;
    }
    Ok(())
}

fn yielded(env: &HashMap<String, Tensor>, name: &str) -> Result<Tensor, Failure> {
    env.get(name)
        .cloned()
        .ok_or_else(|| Failure::Message(format!("`{name}` is used before it is defined")))
}

fn scope<'a>(b: &'a Bindings, env: &'a HashMap<String, Tensor>, stmt: usize) -> Scope<'a> {
    Scope {
        def: b.def,
        stmt,
        env,
        scalars: &b.scalars,
        sizes: &b.sizes,
        mode: b.mode,
        reduction: false,
        iters: HashMap::new(),
        values: HashMap::new(),
        comp: None,
        lets: HashMap::new(),
        lets_bound: 0,
    }
}

/// The value of a region's condition. In arithmetic mod p tensor values
/// are residues, so a condition may only read sizes and scalars there.
fn condition(
    b: &Bindings,
    env: &HashMap<String, Tensor>,
    e: &ir::Expr,
    stmt: usize,
) -> Result<bool, Failure> {
    if b.mode == Mode::ModP && !e.reads().is_empty() {
        return Err(Failure::Message(
            "a condition on tensor values has no meaning in arithmetic mod p".into(),
        ));
    }
    match scope(b, env, stmt).value(e).map_err(Failure::Message)? {
        ir::Value::Bool(v) => Ok(v),
        other => Err(Failure::Message(format!(
            "the condition is {other:?}, not a bool"
        ))),
    }
}

fn int_value(
    b: &Bindings,
    env: &HashMap<String, Tensor>,
    e: &ir::Expr,
    stmt: usize,
) -> Result<i64, Failure> {
    match scope(b, env, stmt).value(e).map_err(Failure::Message)? {
        ir::Value::Int(v) => Ok(v),
        other => Err(Failure::Message(format!(
            "the loop count is {other:?}, not an integer"
        ))),
    }
}

/// Runs call statement `stmt` and returns the tensors it binds.
fn exec_call(
    program: &Program,
    b: &Bindings,
    env: &HashMap<String, Tensor>,
    call: &CallStmt,
    stmt: usize,
    depth: usize,
) -> Result<Vec<(String, Tensor)>, RunError> {
    let def = b.def;
    let err = |m: String| RunError::at(&def.name, stmt, m);
    let scope = scope(b, env, stmt);
    let callee = program
        .def(&call.callee)
        .ok_or_else(|| err(format!("call of unknown def `{}`", call.callee)))?;
    if callee.params.len() != call.args.len() {
        return Err(err(format!(
            "`{}` takes {} arguments, the call passes {}",
            callee.name,
            callee.params.len(),
            call.args.len()
        )));
    }
    let mut args = HashMap::new();
    for (p, a) in callee.params.iter().zip(&call.args) {
        let v = match (p, a) {
            (Param::Tensor(_), CallArg::Tensor(t)) => Arg::Tensor(
                env.get(t)
                    .ok_or_else(|| err(format!("`{t}` is read before it is defined")))?
                    .clone(),
            ),
            // In mod-p mode a float scalar is a value, passed on as a
            // residue; integer scalars are sizes and keep ordinary values.
            (Param::Scalar { dtype, .. }, CallArg::Scalar(e))
                if b.mode == Mode::ModP && dtype.is_float() =>
            {
                Arg::Scalar(ir::Value::Int(scope.residue_value(e).map_err(err)? as i64))
            }
            (Param::Scalar { .. }, CallArg::Scalar(e)) => Arg::Scalar(scope.value(e).map_err(err)?),
            _ => {
                return Err(err(format!(
                    "the argument for `{}` of `{}` is of the wrong kind",
                    p.name(),
                    callee.name
                )))
            }
        };
        args.insert(p.name().to_string(), v);
    }
    let outputs = run_def(
        program,
        callee,
        &args,
        &HashMap::new(),
        b.mode,
        b.progress,
        depth + 1,
    )
    .map_err(|e| {
        // An error inside the callee's statements keeps its own location;
        // one about the arguments belongs to the call.
        if e.stmt.is_none() {
            err(format!("in the call of `{}`: {}", callee.name, e.message))
        } else {
            let mut e = e;
            e.calls.insert(0, (def.name.clone(), stmt));
            e
        }
    })?;
    if outputs.len() != call.results.len() {
        return Err(err(format!(
            "`{}` returns {} tensors, the call binds {}",
            callee.name,
            outputs.len(),
            call.results.len()
        )));
    }
    call.results
        .iter()
        .zip(outputs)
        .map(|(r, (_, t))| {
            let decl = def
                .tensor(r)
                .ok_or_else(|| err(format!("call result `{r}` has no declaration")))?;
            if b.mode == Mode::Real && t.dtype() != decl.dtype {
                return Err(err(format!(
                    "`{}` returns {} for `{r}`, which is declared {}",
                    callee.name,
                    t.dtype(),
                    decl.dtype
                )));
            }
            let want = shape_of(decl, &b.sizes).map_err(err)?;
            if t.shape() != want.as_slice() {
                return Err(err(format!(
                    "`{}` returns shape {} for `{r}`, which is declared {}",
                    callee.name,
                    show_tuple(t.shape()),
                    show_tuple(&want)
                )));
            }
            Ok((r.clone(), t))
        })
        .collect()
}
