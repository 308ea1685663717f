//! Binding size symbols from arguments, and evaluating symbolic shapes.
//!
//! A def's size symbols get their values from the shapes of its tensor
//! arguments, from its integer scalar arguments (which are size symbols
//! too), and from sizes the caller gives (`--size N=4`). Every source must
//! agree; a disagreement names the tensor, the dimension, its symbol, both
//! values and where the first value came from. Shapes evaluated from sizes
//! are checked to be non-negative and below the interpreter's element limit.

use std::collections::HashMap;

use ir::{Def, EvalError, Param, SizeExpr, TensorDecl};

use crate::error::RunError;
use crate::tensors::{element_count, show_tuple};
use crate::Arg;
use ir::arith;

/// Binds every size symbol of `def` (and checks every constant dimension)
/// from the shapes of the tensor arguments, the integer scalar arguments and
/// `given` (e.g. from `--size`).
///
/// A mismatch is an error naming the tensor, the dimension's symbol and both
/// sizes, e.g. "tensor `A` dimension 1 (`K`) is 5, but `K` = 4 from `B`".
/// Missing arguments are fine here (their symbols may come from `given`);
/// the result may then leave symbols unbound. A given name that is neither a
/// size symbol nor an integer scalar of `def` is an error.
pub fn bind_sizes(
    def: &Def,
    args: &HashMap<String, Arg>,
    given: &HashMap<String, i64>,
) -> Result<HashMap<String, i64>, RunError> {
    let err = |m: String| RunError::new(&def.name, m);
    let symbols = def.size_symbols();
    let mut sizes = HashMap::new();
    // Where each binding came from, as the end of a sentence.
    let mut source: HashMap<String, String> = HashMap::new();

    let mut names: Vec<&String> = given.keys().collect();
    names.sort();
    for name in names {
        let int_scalar = def.scalar(name).is_some_and(|t| t.is_int());
        if !int_scalar && !symbols.contains(name) {
            return Err(err(format!(
                "`{name}` is given a size, but `{}` has no size symbol or integer scalar of that name",
                def.name
            )));
        }
        sizes.insert(name.clone(), given[name]);
        source.insert(name.clone(), "as given".to_string());
    }

    for p in &def.params {
        let Param::Scalar { name, dtype } = p else {
            continue;
        };
        let Some(arg) = args.get(name) else { continue };
        let Arg::Scalar(v) = arg else {
            return Err(err(format!(
                "`{name}` is a scalar parameter, but a tensor was passed"
            )));
        };
        if !dtype.is_int() {
            continue;
        }
        // `convert_scalar` only accepts integers for integer types.
        let ir::Value::Int(v) = arith::convert_scalar(name, *dtype, *v, true).map_err(&err)? else {
            continue;
        };
        if let Some(&old) = sizes.get(name) {
            if old != v {
                return Err(err(format!(
                    "scalar `{name}` is {v}, but `{name}` = {old} {}",
                    source[name]
                )));
            }
        }
        sizes.insert(name.clone(), v);
        source.insert(name.clone(), format!("from scalar `{name}`"));
    }

    // First the dimensions that are a single symbol or a constant; then,
    // with everything bound that can be, the compound ones.
    let mut compound = Vec::new();
    for decl in def.tensor_params() {
        let Some(arg) = args.get(&decl.name) else {
            continue;
        };
        let Arg::Tensor(t) = arg else {
            return Err(err(format!(
                "`{}` is a tensor parameter, but a scalar was passed",
                decl.name
            )));
        };
        if t.shape().len() != decl.shape.len() {
            return Err(err(format!(
                "tensor `{}` has rank {}, but `{}` declares rank {}",
                decl.name,
                t.shape().len(),
                def.name,
                decl.shape.len()
            )));
        }
        for (k, (dim, &actual)) in decl.shape.iter().zip(t.shape()).enumerate() {
            let actual = i64::try_from(actual)
                .map_err(|_| err(format!("tensor `{}` is too large", decl.name)))?;
            if let Some(c) = dim.as_const() {
                if c != actual {
                    return Err(err(format!(
                        "tensor `{}` dimension {k} is {actual}, but the signature says {c}",
                        decl.name
                    )));
                }
            } else if let Some(s) = dim.as_sym() {
                match sizes.get(s) {
                    Some(&v) if v != actual => {
                        return Err(err(format!(
                            "tensor `{}` dimension {k} (`{s}`) is {actual}, but `{s}` = {v} {}",
                            decl.name, source[s]
                        )))
                    }
                    Some(_) => {}
                    None => {
                        sizes.insert(s.to_string(), actual);
                        source.insert(s.to_string(), format!("from `{}`", decl.name));
                    }
                }
            } else {
                compound.push((&decl.name, k, dim, actual));
            }
        }
    }
    for (name, k, dim, actual) in compound {
        if let Ok(v) = dim.eval_map(&sizes) {
            if v != actual {
                return Err(err(format!(
                    "tensor `{name}` dimension {k} (`{dim}`) is {actual}, but `{dim}` = {v}"
                )));
            }
        }
    }
    Ok(sizes)
}

/// The concrete shape of tensor `tensor` of `def` (a parameter, or any other
/// declared tensor) under `sizes`; an unbound symbol is an error naming the
/// tensor and the symbol.
pub fn param_shape(
    def: &Def,
    tensor: &str,
    sizes: &HashMap<String, i64>,
) -> Result<Vec<usize>, RunError> {
    let decl = def.tensor(tensor).ok_or_else(|| {
        RunError::new(
            &def.name,
            format!("`{}` has no tensor `{tensor}`", def.name),
        )
    })?;
    shape_of(decl, sizes).map_err(|m| RunError::new(&def.name, m))
}

/// Evaluates a size under `sizes`, naming `what` in errors.
pub(crate) fn eval_size(
    e: &SizeExpr,
    sizes: &HashMap<String, i64>,
    what: &str,
) -> Result<i64, String> {
    e.eval_map(sizes).map_err(|x| match x {
        EvalError::Unbound(s) => format!("{what} needs `{s}`, which has no value"),
        EvalError::DivisionByZero => format!("{what} (`{e}`) divides by zero"),
        EvalError::Overflow => format!("{what} (`{e}`) overflows"),
    })
}

/// The concrete shape of a declared tensor, checked against the limit.
pub(crate) fn shape_of(
    decl: &TensorDecl,
    sizes: &HashMap<String, i64>,
) -> Result<Vec<usize>, String> {
    let name = &decl.name;
    let shape = decl
        .shape
        .iter()
        .enumerate()
        .map(|(k, d)| {
            let v = eval_size(d, sizes, &format!("the shape of `{name}`"))?;
            usize::try_from(v)
                .map_err(|_| format!("tensor `{name}` dimension {k} (`{d}`) is negative: {v}"))
        })
        .collect::<Result<Vec<usize>, String>>()?;
    tensor::check_elements(name, Some(&show_tuple(&shape)), element_count(&shape))?;
    Ok(shape)
}
