//! Binding a def's arguments and sizes: sizes given as `SYM=N`, arguments
//! given as `NAME=FILE.npy` or `NAME=NUMBER` items, sizes read off the
//! arguments' shapes, and seeded random tensors for the inputs not given
//! (each reported as a [`Note`]).
//!
//! Guarantees: a [`Bound`] binds every size symbol and integer scalar the
//! def's shapes use that the arguments and given sizes determine, and has
//! an argument for every parameter; every problem is an [`Error`] naming
//! the item or the parameter.

use std::collections::HashMap;
use std::path::Path;

use interp::{Arg, Tensor};
use ir::{DType, Def, Param, TensorDecl, Value};

use crate::note::{join, Note};
use crate::Error;

/// Size symbols and integer scalars, bound.
pub type Sizes = HashMap<String, i64>;

/// A def's arguments with its sizes bound.
#[derive(Debug)]
pub struct Bound {
    /// An argument for every parameter.
    pub args: HashMap<String, Arg>,
    /// The sizes given by the caller.
    pub given: Sizes,
    /// Every size symbol and integer scalar, bound.
    pub sizes: Sizes,
    /// The random inputs made.
    pub notes: Vec<Note>,
}

/// An error unless every size in `sizes` is positive (for callers that
/// take sizes as a map rather than as `SYM=N` items).
pub fn check_positive(sizes: &Sizes) -> Result<(), Error> {
    let mut bad: Vec<(&String, &i64)> = sizes.iter().filter(|(_, &v)| v < 1).collect();
    bad.sort();
    match bad.first() {
        Some((k, v)) => Err(Error::Sizes(format!(
            "size `{k}` is {v}; sizes must be positive"
        ))),
        None => Ok(()),
    }
}

/// Parses `SYM=N` items (positive integers, each symbol once).
pub fn parse_sizes(items: &[String]) -> Result<Sizes, Error> {
    let mut out = HashMap::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else {
            return Err(Error::Usage(format!(
                "`--size {it}` is not of the form SYM=N"
            )));
        };
        let v: i64 = v
            .trim()
            .parse()
            .map_err(|_| Error::Usage(format!("`--size {it}`: `{v}` is not an integer")))?;
        if v < 1 {
            return Err(Error::Usage(format!(
                "`--size {it}`: sizes must be positive"
            )));
        }
        if out.insert(k.trim().to_string(), v).is_some() {
            return Err(Error::Usage(format!("size `{k}` is given twice")));
        }
    }
    Ok(out)
}

/// The shapes of the `.npy` files among `NAME=VALUE` items, by name, read
/// from their headers (an imported model's symbolic dimensions are bound
/// from them).
pub fn item_shapes(items: &[String]) -> Result<HashMap<String, Vec<usize>>, Error> {
    let mut shapes = HashMap::new();
    for it in items {
        if let Some((k, v)) = it.split_once('=') {
            let v = v.trim();
            if v.ends_with(".npy") {
                let shape = npy::shape(Path::new(v)).map_err(|message| Error::Npy {
                    path: v.to_string(),
                    message,
                })?;
                shapes.insert(k.trim().to_string(), shape);
            }
        }
    }
    Ok(shapes)
}

/// The most elements an input may have for its values to be read before
/// the import: values an operator needs as constants (axes, shapes,
/// bounds) are short.
pub const SHAPE_LIKE_MOST: usize = 4096;

/// The tensors of the `NAME=FILE.npy` items that hold at most `most`
/// elements, by name, each read as the type `declared` gives its name (a
/// file of a narrow float's raw codes names no type itself; one whose
/// name has no declared type is left out). With [`SHAPE_LIKE_MOST`], these
/// are the values the import reads where a model's operators need
/// constants.
pub fn item_values(
    items: &[String],
    declared: &HashMap<String, DType>,
    most: usize,
) -> Result<HashMap<String, Tensor>, Error> {
    let mut values = HashMap::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if !v.ends_with(".npy") {
            continue;
        }
        let npy_error = |message| Error::Npy {
            path: v.to_string(),
            message,
        };
        let shape = npy::shape(Path::new(v)).map_err(npy_error)?;
        if shape.iter().product::<usize>() <= most {
            match npy::read_as(Path::new(v), declared.get(k).copied()) {
                Ok(t) => {
                    values.insert(k.to_string(), t);
                }
                // Its binding reports it.
                Err(_) if !declared.contains_key(k) => {}
                Err(message) => return Err(npy_error(message)),
            }
        }
    }
    Ok(values)
}

/// `NAME=VALUE` items of an imported model with the model's input names
/// replaced by the model def's parameters. An item for an input with an
/// empty dimension, which the model def does not take, is checked against
/// the declared shape and dropped.
pub fn model_items(source: &crate::Source, items: &[String]) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for it in items {
        let (k, v) = it.split_once('=').ok_or_else(|| {
            Error::Usage(format!("`--input {it}` is not of the form NAME=FILE.npy"))
        })?;
        let k = k.trim();
        match source.parameter_of(k)? {
            Some(param) => out.push(format!("{param}={v}")),
            None => check_empty(source, k, v.trim())?,
        }
    }
    Ok(out)
}

/// Whether `.npy` file `path`, given for the empty input `name`, has the
/// input's declared element type and shape.
fn check_empty(source: &crate::Source, name: &str, path: &str) -> Result<(), Error> {
    let Some(port) = source
        .model
        .as_ref()
        .and_then(|m| m.empty.iter().find(|p| p.onnx == name))
    else {
        return Err(Error::Internal(format!("`{name}` is no empty input")));
    };
    let npy_error = |message| Error::Npy {
        path: path.to_string(),
        message,
    };
    let tensor = npy::read_as(Path::new(path), Some(port.dtype)).map_err(npy_error)?;
    if tensor.dtype() != port.dtype {
        return Err(Error::Input {
            name: name.to_string(),
            message: format!(
                "input `{name}`: `{path}` holds {} but `{name}` is {}",
                tensor.dtype(),
                port.dtype
            ),
        });
    }
    if tensor.shape() != port.shape {
        return Err(Error::Shape {
            name: name.to_string(),
            message: format!(
                "input `{name}`: `{path}` has shape ({}), but the model declares ({})",
                join(tensor.shape()),
                join(&port.shape)
            ),
        });
    }
    Ok(())
}

/// The arguments `NAME=FILE.npy` or `NAME=NUMBER` items give `def`.
pub fn read_items(def: &Def, items: &[String]) -> Result<HashMap<String, Arg>, Error> {
    let mut args = HashMap::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else {
            return Err(Error::Usage(format!(
                "`--input {it}` is not of the form NAME=FILE.npy or NAME=NUMBER"
            )));
        };
        let (k, v) = (k.trim(), v.trim());
        let input = |message: String| Error::Input {
            name: k.to_string(),
            message,
        };
        let param = param(def, k)?;
        let arg = match param {
            Param::Scalar { dtype, .. } => Arg::Scalar(parse_scalar(k, v, *dtype)?),
            Param::Tensor(t) => {
                let decl = declaration(def, t)?;
                let tensor =
                    npy::read_as(Path::new(v), Some(decl.dtype)).map_err(|message| Error::Npy {
                        path: v.to_string(),
                        message,
                    })?;
                if tensor.dtype() != decl.dtype {
                    return Err(input(format!(
                        "input `{t}`: `{v}` holds {} but `{t}` is {}",
                        tensor.dtype(),
                        decl.dtype
                    )));
                }
                if tensor.shape().len() != decl.shape.len() {
                    return Err(Error::Shape {
                        name: k.to_string(),
                        message: format!(
                            "input `{t}`: `{v}` has {} dimensions ({}), but `{t}` has {} ({})",
                            tensor.shape().len(),
                            join(tensor.shape()),
                            decl.shape.len(),
                            decl.shape
                                .iter()
                                .map(|s| s.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    });
                }
                Arg::Tensor(tensor)
            }
        };
        if args.insert(k.to_string(), arg).is_some() {
            return Err(input(format!("input `{k}` is given twice")));
        }
    }
    Ok(args)
}

/// The integer scalar parameters of `def` that `sizes` gives, as
/// arguments: a search binds them as sizes (other scalars have no value
/// to time with, and [`bind`] says so).
pub fn int_scalars(def: &Def, sizes: &HashMap<String, i64>) -> HashMap<String, Arg> {
    def.params
        .iter()
        .filter_map(|p| match p {
            Param::Scalar { name, dtype } if dtype.is_int() => sizes
                .get(name)
                .map(|v| (name.clone(), Arg::Scalar(Value::Int(*v)))),
            _ => None,
        })
        .collect()
}

/// Binds `def`'s sizes from `given` and the shapes of `args`, and fills
/// every tensor parameter `args` lacks with seeded random values (the seed
/// of parameter k is `seed + k`), noting each. A scalar parameter must be
/// given.
pub fn bind(
    def: &Def,
    mut args: HashMap<String, Arg>,
    given: Sizes,
    seed: u64,
) -> Result<Bound, Error> {
    let sizes = interp::bind_sizes(def, &args, &given).map_err(|e| Error::Sizes(e.message))?;
    let mut notes = Vec::new();
    for (k, p) in def.params.iter().enumerate() {
        if args.contains_key(p.name()) {
            continue;
        }
        match p {
            Param::Scalar { name, dtype } => {
                return Err(Error::Input {
                    name: name.clone(),
                    message: format!(
                        "scalar `{name}` ({dtype}) has no value\n  = help: pass `--input {name}=NUMBER`"
                    ),
                });
            }
            Param::Tensor(t) => {
                let shape = interp::param_shape(def, t, &sizes).map_err(|e| Error::Input {
                    name: t.clone(),
                    message: format!(
                        "cannot make a random value for input `{t}`: {}\n  = help: pass `--input {t}=FILE.npy` or bind the size with `--size`",
                        e.message
                    ),
                })?;
                let dtype = def.tensor(t).map_or(DType::F32, |d| d.dtype);
                let seed = seed.wrapping_add(k as u64);
                args.insert(t.clone(), Arg::Tensor(Tensor::random(dtype, &shape, seed)));
                notes.push(Note::RandomInput {
                    name: t.clone(),
                    dtype,
                    shape,
                    seed,
                });
            }
        }
    }
    Ok(Bound {
        args,
        given,
        sizes,
        notes,
    })
}

/// A scalar argument's value: `true`/`false`/`1`/`0` for bool, a number
/// (rounded to float32 for `float`) or an integer that fits its type.
fn parse_scalar(name: &str, v: &str, dtype: DType) -> Result<Value, Error> {
    let bad = |message: String| Error::Input {
        name: name.to_string(),
        message,
    };
    let invalid = || bad(format!("input `{name}`: `{v}` is not a valid {dtype}"));
    if dtype == DType::Bool {
        return match v {
            "true" | "1" => Ok(Value::Bool(true)),
            "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(invalid()),
        };
    }
    if dtype.is_float() {
        let x: f64 = v.parse().map_err(|_| invalid())?;
        let x = if dtype == DType::F32 {
            f64::from(x as f32)
        } else {
            x
        };
        // `inf` and `nan` are asked for by name; a finite number too large
        // for the type must not become one silently.
        let named = v.trim_start_matches(['+', '-']).to_ascii_lowercase();
        if x.is_infinite() && !matches!(named.as_str(), "inf" | "infinity") {
            return Err(bad(format!(
                "input `{name}`: {v} is out of the range of {dtype}"
            )));
        }
        return Ok(Value::Float(x));
    }
    let x: i64 = v.parse().map_err(|_| invalid())?;
    let fits = match dtype {
        DType::I8 => i8::try_from(x).is_ok(),
        DType::I16 => i16::try_from(x).is_ok(),
        DType::I32 => i32::try_from(x).is_ok(),
        DType::U8 => u8::try_from(x).is_ok(),
        DType::U16 => u16::try_from(x).is_ok(),
        DType::U32 => u32::try_from(x).is_ok(),
        DType::U64 => x >= 0,
        _ => true,
    };
    if !fits {
        return Err(bad(format!("input `{name}`: {x} does not fit in {dtype}")));
    }
    Ok(Value::Int(x))
}

/// Parameter `name` of `def`, or an input error naming the parameters it
/// has.
pub fn param<'d>(def: &'d Def, name: &str) -> Result<&'d Param, Error> {
    def.params.iter().find(|p| p.name() == name).ok_or_else(|| {
        let names: Vec<String> = def
            .params
            .iter()
            .map(|p| format!("`{}`", p.name()))
            .collect();
        Error::Input {
            name: name.to_string(),
            message: format!(
                "def `{}` has no parameter `{name}`\n  = help: its parameters are {}",
                def.name,
                names.join(", ")
            ),
        }
    })
}

/// The declaration of `def`'s tensor parameter `t` (the checker gives
/// every one a declaration).
pub(crate) fn declaration<'d>(def: &'d Def, t: &str) -> Result<&'d TensorDecl, Error> {
    def.tensor(t)
        .ok_or_else(|| Error::Internal(format!("no declaration for `{t}`")))
}
