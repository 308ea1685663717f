//! Loading a def of a Python file: the imperative frontend traces it at
//! the arguments the run gives (tensors' shapes and types from their
//! `.npy` headers, or from the annotations and `--size`; `int` and `bool`
//! arguments as values) and functionalizes it into a TC program.
//!
//! A def is specialized on its integer and boolean arguments, as on its
//! shapes: those arguments are not parameters of the converted def, and
//! the run's remaining items name its parameters.

use std::collections::HashMap;
use std::path::Path;

use crate::bind::Sizes;
use crate::error::Error;
use crate::source::{read_text, Source};

/// A Python def converted, and the conversion's report.
#[derive(Debug)]
pub struct Loaded {
    pub source: Source,
    /// The `--input` items for the converted def's parameters.
    pub items: Vec<String>,
    /// The mutations the conversion removed: where (line, column) and what
    /// replaced each.
    pub removed: Vec<String>,
}

/// Reads the Python file at `path` and functionalizes def `def` (the
/// file's last def when not named) for the `NAME=VALUE` items and sizes.
pub fn load_python(
    path: &Path,
    def: Option<&str>,
    sizes: &Sizes,
    items: &[String],
    fuse: bool,
) -> Result<Loaded, Error> {
    let (name, text) = read_text(path)?;
    let located = |e: ssa::Error| Error::Source(e.render(&name, &text));
    let module = ssa::Module::parse(&text).map_err(located)?;
    let defs = module.defs();
    let def = match def {
        Some(d) if defs.contains(&d) => d.to_string(),
        Some(d) => {
            return Err(Error::Usage(format!(
                "`{name}` has no def `{d}`\n  = help: its defs are {}",
                quoted(&defs)
            )))
        }
        None => match defs.as_slice() {
            [] => return Err(Error::Usage(format!("`{name}` has no defs"))),
            [only] => only.to_string(),
            _ => {
                return Err(Error::Usage(format!(
                    "`{name}` has several defs; choose one with `--def`\n  = help: its defs are {}",
                    quoted(&defs)
                )))
            }
        },
    };
    let mut given: HashMap<String, String> = HashMap::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else {
            return Err(Error::Usage(format!(
                "`--input {it}` is not of the form NAME=FILE.npy or NAME=NUMBER"
            )));
        };
        given.insert(k.trim().to_string(), v.trim().to_string());
    }
    let signature = module.signature(&def).map_err(located)?;
    let mut args = Vec::new();
    let mut kept = Vec::new();
    let mut bound: HashMap<String, i64> = sizes.clone();
    for (param, ann) in &signature {
        let value = given.remove(param);
        let arg = match (value, ann) {
            (Some(v), _) if v.ends_with(".npy") => {
                let (dtype, shape) = npy::header(Path::new(&v)).map_err(|message| Error::Npy {
                    path: v.clone(),
                    message,
                })?;
                let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
                if let Some(ssa::Annotation::Tensor { dims, .. }) = ann {
                    bind_dims(param, dims, &shape, &mut bound)?;
                }
                kept.push(format!("{param}={v}"));
                ssa::Arg::Tensor { dtype, shape }
            }
            (Some(v), Some(ssa::Annotation::Float)) => {
                kept.push(format!("{param}={v}"));
                ssa::Arg::Float
            }
            (Some(v), Some(ssa::Annotation::Bool)) => match v.as_str() {
                "true" | "True" | "1" => ssa::Arg::Bool(true),
                "false" | "False" | "0" => ssa::Arg::Bool(false),
                _ => return Err(input(param, format!("`{v}` is not a bool (true or false)"))),
            },
            (Some(v), Some(ssa::Annotation::Int) | None) => match v.parse::<i64>() {
                Ok(i) => ssa::Arg::Int(i),
                Err(_) if ann.is_none() && v.parse::<f64>().is_ok() => {
                    kept.push(format!("{param}={v}"));
                    ssa::Arg::Float
                }
                Err(_) => return Err(input(param, format!("`{v}` is not an integer"))),
            },
            (Some(v), Some(ssa::Annotation::Tensor { .. })) => {
                return Err(input(
                    param,
                    format!("`{param}` is a tensor: pass `--input {param}=FILE.npy`, not `{v}`"),
                ))
            }
            (None, Some(ssa::Annotation::Tensor { dtype, dims })) => {
                // A tensor not given is random, of the annotated shape.
                let shape = dims
                    .iter()
                    .map(|d| match d {
                        ssa::Dim::Fixed(n) => Ok(*n),
                        ssa::Dim::Symbol(s) => bound.get(s).copied().ok_or_else(|| {
                            input(param, format!("size `{s}` of `{param}` has no value\n  = help: pass `--input {param}=FILE.npy` or bind the size with `--size {s}=N`"))
                        }),
                    })
                    .collect::<Result<Vec<i64>, Error>>()?;
                ssa::Arg::Tensor {
                    dtype: *dtype,
                    shape,
                }
            }
            // A float is a parameter of the converted def: its value is
            // needed to run it, not to convert it.
            (None, Some(ssa::Annotation::Float)) => ssa::Arg::Float,
            (None, _) => {
                return Err(input(
                    param,
                    format!("`{param}` has no value\n  = help: pass `--input {param}=...`"),
                ))
            }
        };
        args.push(arg);
    }
    if let Some(extra) = given.keys().next() {
        return Err(Error::Usage(format!(
            "`{extra}` is not a parameter of `{def}`"
        )));
    }
    let (source, removed) = convert(&name, &text, &module, &def, &args, fuse)?;
    Ok(Loaded {
        source,
        items: kept,
        removed,
    })
}

/// Converts def `def` of `module` (read from `text`, named `name` in
/// messages) for `args` (fused, with `fuse`: what runs): the program as a
/// source, and a line per removed mutation (where, and what replaced it).
pub fn convert(
    name: &str,
    text: &str,
    module: &ssa::Module,
    def: &str,
    args: &[ssa::Arg],
    fuse: bool,
) -> Result<(Source, Vec<String>), Error> {
    let mut f =
        ssa::functionalize(module, def, args).map_err(|e| Error::Source(e.render(name, text)))?;
    if fuse {
        for d in &mut f.program.defs {
            ssa::parallelize::parallelize(d);
            ssa::hoist::hoist(d);
            ssa::fuse::fuse(d);
        }
    }
    let removed = f
        .removed
        .iter()
        .map(|r| {
            let (line, col) = ssa::Error::new(r.span, "").line_col(text);
            format!(
                "{name}:{line}:{col}: {} replaced by {} Assign{} and {} Access{}",
                text[r.span.start as usize..r.span.end as usize]
                    .lines()
                    .next()
                    .unwrap_or(""),
                r.assigns,
                if r.assigns == 1 { "" } else { "s" },
                r.accesses,
                if r.accesses == 1 { "" } else { "es" },
            )
        })
        .collect();
    let printed = ir::print_program(&f.program);
    Ok((
        Source::converted(name.to_string(), printed, f.program),
        removed,
    ))
}

fn bind_dims(
    param: &str,
    dims: &[ssa::Dim],
    shape: &[i64],
    bound: &mut HashMap<String, i64>,
) -> Result<(), Error> {
    for (d, &n) in dims.iter().zip(shape) {
        if let ssa::Dim::Symbol(s) = d {
            match bound.get(s) {
                Some(&v) if v != n => {
                    return Err(Error::Shape {
                        name: param.to_string(),
                        message: format!(
                            "`{param}` has size {n} for `{s}`, which is {v} elsewhere"
                        ),
                    })
                }
                _ => {
                    bound.insert(s.clone(), n);
                }
            }
        }
    }
    Ok(())
}

fn input(name: &str, message: String) -> Error {
    Error::Input {
        name: name.to_string(),
        message: format!("input `{name}`: {message}"),
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
