//! `tessera check`'s proof of TC's `<=>` annotations.
//!
//! `O(i,j) +=! A(i,k) * B(k,j) <=> matmul(A(i,k), B(k,j))` claims that the
//! statement computes what def `matmul` (of the file, else of the prelude)
//! computes on the tensors the annotation names. The claim is checked with
//! the equivalence verifier on two defs built from the annotated one: both
//! keep its parameters and the statements before the annotated one; the
//! first then runs the statement, the second calls the named def and writes
//! its first result over the statement's left-hand box (accumulated with
//! the statement's operator when it accumulates onto earlier values). Both
//! return the statement's left-hand tensor.
//!
//! Sizes come from `--size`; a size symbol or integer scalar it leaves
//! unbound takes [`DEFAULT_SIZE`]. A claim that fails, or that cannot be
//! checked, is an error located at the annotation.

use std::collections::{HashMap, HashSet};

use ir::{
    CallArg, CallStmt, Comprehension, Def, Expr, Param, Program, Reduction, Stmt, TensorDecl,
    TensorRole,
};

/// The size given to every size symbol and integer scalar `--size` does not
/// bind: small, so the exact test stays fast, and odd, so that strides and
/// halvings meet a remainder.
pub const DEFAULT_SIZE: i64 = 5;

/// Proves every annotation of `checked`; returns one line per proved
/// annotation, or the rendered errors.
pub fn prove_all(
    checked: &tc::Checked,
    sizes: &HashMap<String, i64>,
    name: &str,
    text: &str,
) -> Result<String, String> {
    let mut lines = String::new();
    let mut errs = Vec::new();
    let mut prelude: Option<Program> = None;
    for eq in &checked.equivalences {
        match prove(&checked.program, eq, sizes, &mut prelude) {
            Ok(line) => lines.push_str(&line),
            Err(d) => errs.push(d),
        }
    }
    if errs.is_empty() {
        Ok(lines)
    } else {
        Err(tc::render_diagnostics(&errs, name, text))
    }
}

fn prove(
    program: &Program,
    eq: &tc::Equivalence,
    given: &HashMap<String, i64>,
    prelude: &mut Option<Program>,
) -> Result<String, tc::Diagnostic> {
    let fail = |m: String| tc::Diagnostic::error(m, eq.span);
    let def = program
        .def(&eq.def)
        .ok_or_else(|| fail(format!("internal error: no def `{}`", eq.def)))?;
    let Some(Stmt::Comp(c)) = def.stmts.get(eq.stmt) else {
        return Err(fail(
            "internal error: the annotated statement is not a comprehension".to_string(),
        ));
    };
    // The named def, from the file or else from the prelude.
    let mut pool = program.clone();
    if program.def(&eq.callee).is_none() {
        let p = match prelude {
            Some(p) => p,
            None => prelude.insert(
                tc::check_source(onnx::PRELUDE)
                    .map_err(|_| fail("internal error: the prelude does not check".to_string()))?
                    .program,
            ),
        };
        let own: HashSet<&str> = program.defs.iter().map(|d| d.name.as_str()).collect();
        pool.defs.extend(
            p.defs
                .iter()
                .filter(|d| !own.contains(d.name.as_str()))
                .cloned(),
        );
    }
    let callee = pool.def(&eq.callee).cloned().ok_or_else(|| {
        fail(format!(
            "`<=>` names `{}`, which is no def of this file or of the prelude",
            eq.callee
        ))
        .with_help("name a def of the file, or of the prelude such as `matmul`")
    })?;
    if callee.params.len() != eq.args.len() {
        return Err(fail(format!(
            "`{}` takes {} parameters, but the annotation passes {}",
            callee.name,
            callee.params.len(),
            eq.args.len()
        )));
    }
    if let Some(p) = callee
        .params
        .iter()
        .find(|p| matches!(p, Param::Scalar { .. }))
    {
        return Err(fail(format!(
            "`{}` has the scalar parameter `{}`; `<=>` passes tensors only",
            callee.name,
            p.name()
        )));
    }
    let Some(first) = callee.outputs.first() else {
        return Err(fail(format!("`{}` returns nothing", callee.name)));
    };
    let out_type = callee.tensor(first).map(|t| t.dtype);
    let lhs = def
        .tensor(&c.tensor)
        .ok_or_else(|| fail(format!("internal error: no tensor `{}`", c.tensor)))?;
    if out_type != Some(lhs.dtype) {
        return Err(fail(format!(
            "`{}` returns {}, but `{}` is {}",
            callee.name,
            out_type.map_or("nothing".to_string(), |t| t.to_string()),
            c.tensor,
            lhs.dtype
        )));
    }

    let before = &def.stmts[..eq.stmt];
    let stmt_side = truncated(
        def,
        "__stmt",
        before.iter().cloned().chain([Stmt::Comp(c.clone())]),
        &c.tensor,
        None,
    );
    let result = fresh(def, &format!("{}_result", callee.name));
    let call = Stmt::Call(CallStmt {
        callee: callee.name.clone(),
        args: eq.args.iter().map(|a| CallArg::Tensor(a.clone())).collect(),
        results: vec![result.clone()],
    });
    // The call's result over the statement's left-hand box, combined as
    // the statement combines its body with the tensor.
    let accumulates = c.op != Reduction::Assign && !c.init;
    let copy = Comprehension {
        tensor: c.tensor.clone(),
        indices: c.indices.clone(),
        op: if accumulates { c.op } else { Reduction::Assign },
        init: false,
        body: Expr::Read(
            result.clone(),
            c.indices.iter().map(|i| Expr::Iter(i.clone())).collect(),
        ),
        ranges: c
            .ranges
            .iter()
            .filter(|r| c.indices.contains(&r.name))
            .cloned()
            .collect(),
        lets: Vec::new(),
        exists: Vec::new(),
    };
    let temp = TensorDecl {
        name: result,
        dtype: lhs.dtype,
        shape: lhs.shape.clone(),
        role: TensorRole::Temp,
    };
    let call_side = truncated(
        def,
        "__call",
        before.iter().cloned().chain([call, Stmt::Comp(copy)]),
        &c.tensor,
        Some(temp),
    );
    pool.defs.push(stmt_side);
    pool.defs.push(call_side);
    if let Err(problems) = ir::verify_program(&pool) {
        return Err(fail(format!(
            "internal error: the defs built to check `<=>` do not verify: {}",
            problems.join("; ")
        )));
    }

    let mut sizes = given.clone();
    let ints = def.params.iter().filter_map(|p| match p {
        Param::Scalar { name, dtype } if dtype.is_int() => Some(name.clone()),
        _ => None,
    });
    for s in def
        .size_symbols()
        .into_iter()
        .chain(ints.collect::<Vec<_>>())
    {
        sizes.entry(s).or_insert(DEFAULT_SIZE);
    }
    let options = opt::verify::Options {
        sizes: sizes.clone(),
        trials: None,
        seed: 0,
        progress: Default::default(),
        deadline: None,
        exact_work: None,
    };
    let mut bound: Vec<String> = sizes
        .iter()
        .filter(|(k, _)| def.size_symbols().contains(k) || def.scalar(k).is_some())
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    bound.sort();
    let claim = format!("{}({})", callee.name, eq.args.join(", "));
    let report = opt::verify::verify(&pool, "__stmt", &pool, "__call", &options).map_err(|e| {
        fail(format!("cannot check `<=> {claim}`: {e}"))
            .with_help(format!("sizes: {}", bound.join(" ")))
    })?;
    if !report.equivalent() {
        let found = opt::verify::print_report(&report);
        return Err(fail(format!(
            "statement {} of `{}` does not compute what `{claim}` computes",
            eq.stmt + 1,
            def.name
        ))
        .with_help(format!(
            "with sizes {}: {}",
            bound.join(" "),
            found.lines().map(str::trim).collect::<Vec<_>>().join("; ")
        )));
    }
    Ok(format!(
        "{}: statement {} <=> {claim} holds (sizes {})\n",
        def.name,
        eq.stmt + 1,
        bound.join(" ")
    ))
}

/// A name not yet used by a tensor of `def`.
fn fresh(def: &Def, base: &str) -> String {
    let mut n = base.to_string();
    while def.tensor(&n).is_some() || def.scalar(&n).is_some() {
        n.push('_');
    }
    n
}

/// `def` with its statements replaced by `stmts` and `output` as its only
/// result: tensors the statements do not mention are dropped (parameters
/// stay, so both sides have the same signature), other results become
/// temporaries.
fn truncated(
    def: &Def,
    name: &str,
    stmts: impl Iterator<Item = Stmt>,
    output: &str,
    extra: Option<TensorDecl>,
) -> Def {
    let stmts: Vec<Stmt> = stmts.collect();
    let mut mentioned: HashSet<String> = HashSet::new();
    ir::walk_stmts(&stmts, &mut |s| match s {
        Stmt::Comp(c) => {
            mentioned.insert(c.tensor.clone());
            let exprs = std::iter::once(&c.body)
                .chain(c.lets.iter().map(|(_, e)| e))
                .chain(&c.exists);
            for e in exprs {
                mentioned.extend(e.reads().into_iter().map(|(t, _)| t.to_string()));
            }
        }
        Stmt::Call(c) => {
            mentioned.extend(c.results.iter().cloned());
            for a in &c.args {
                if let CallArg::Tensor(t) = a {
                    mentioned.insert(t.clone());
                }
            }
        }
        Stmt::Loop(_) | Stmt::If(_) => {
            mentioned.extend(s.reads().into_iter().map(str::to_string));
            mentioned.extend(s.written().into_iter().map(str::to_string));
            if let Stmt::Loop(l) = s {
                mentioned.extend(l.carried.iter().map(|c| c.param.clone()));
            }
        }
    });
    let params: HashSet<&str> = def.params.iter().map(|p| p.name()).collect();
    let mut tensors: Vec<TensorDecl> = def
        .tensors
        .iter()
        .filter(|t| params.contains(t.name.as_str()) || mentioned.contains(&t.name))
        .map(|t| {
            let role = match t.role {
                TensorRole::Temp | TensorRole::Output if t.name == output => TensorRole::Output,
                TensorRole::Output => TensorRole::Temp,
                r => r,
            };
            TensorDecl { role, ..t.clone() }
        })
        .collect();
    tensors.extend(extra);
    Def {
        name: name.to_string(),
        params: def.params.clone(),
        outputs: vec![output.to_string()],
        tensors,
        stmts,
    }
}
