//! A TC def compiled per set of sizes and called many times, as TC's
//! PyTorch binding does: arguments by parameter, the sizes bound from
//! their shapes (and the sizes given once), a specialization built the
//! first time a set of sizes is seen and kept ([`Specializations`]).
//!
//! Guarantees: every problem with the arguments is an [`Error`] naming the
//! parameter: an unknown, missing or repeated name, a wrong element type or
//! a tensor for a scalar is [`Error::Input`], a wrong rank [`Error::Shape`],
//! sizes that disagree [`Error::Sizes`].

use std::borrow::Cow;
use std::collections::HashMap;

use interp::{Arg, Tensor};
use ir::{Def, Param};

use crate::bind::{self, Sizes};
use crate::specialized::{Setup, Specializations, Specialized};
use crate::{Error, Note, Source};

/// A def ready to be called.
#[derive(Debug)]
pub struct Function {
    source: Source,
    def: String,
    given: Sizes,
    /// Arguments declared constant, bound once per specialization: what
    /// depends on them alone runs once, when it is built.
    constants: HashMap<String, Arg>,
    setup: Setup,
    instances: Specializations<Vec<(String, i64)>, Specialized>,
}

impl Function {
    /// Def `entry` of `source` (its only def when `None`), with `given`
    /// binding size symbols for every call.
    pub fn new(
        source: Source,
        entry: Option<&str>,
        given: Sizes,
        setup: Setup,
    ) -> Result<Function, Error> {
        bind::check_positive(&given)?;
        let def = source.pick_def(entry)?;
        let symbols = def.size_symbols();
        let mut names: Vec<&String> = given.keys().collect();
        names.sort();
        let is_int_scalar = |n: &str| {
            def.params
                .iter()
                .any(|p| matches!(p, Param::Scalar { name, dtype } if name == n && dtype.is_int()))
        };
        if let Some(unknown) = names
            .into_iter()
            .find(|n| !symbols.contains(*n) && !is_int_scalar(n))
        {
            return Err(Error::Sizes(format!(
                "size `{unknown}`: def `{}` has no size symbol `{unknown}`",
                def.name
            )));
        }
        Ok(Function {
            def: def.name.clone(),
            source,
            given,
            constants: HashMap::new(),
            setup,
            instances: Specializations::default(),
        })
    }

    /// Declares `constants` (arguments by parameter name) the same on
    /// every call: calls leave them out, and what depends on them alone
    /// (weights packed into a kernel's layout) runs once per set of sizes.
    /// Each is copied now, so a later change to the caller's memory does
    /// not reach it.
    pub fn with_constants(mut self, constants: HashMap<String, Arg>) -> Result<Function, Error> {
        let def = self.def();
        for (name, a) in &constants {
            check_arg(def, name, a)?;
        }
        self.constants = constants
            .into_iter()
            .map(|(name, a)| match a {
                Arg::Tensor(mut t) => {
                    // Access for writing makes the tensor the sole owner
                    // of memory of its own (a caller's memory is copied).
                    t.buffer_mut().as_bytes_mut();
                    (name, Arg::Tensor(t))
                }
                scalar => (name, scalar),
            })
            .collect();
        Ok(self)
    }

    /// The parameters declared constant.
    pub fn constants(&self) -> impl Iterator<Item = &str> {
        self.constants.keys().map(String::as_str)
    }

    pub fn def(&self) -> &Def {
        self.source
            .program()
            .def(&self.def)
            .expect("the def was picked when the function was made")
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// How many sets of sizes the def is compiled for.
    pub fn specializations(&self) -> usize {
        self.instances.len()
    }

    /// Calls the def on `args` (by parameter name): its outputs, in its
    /// order. Notes (a fallback to the interpreter) go to `notes`.
    pub fn call(
        &self,
        args: HashMap<String, Arg>,
        notes: &mut Vec<Note>,
    ) -> Result<Vec<(String, Tensor)>, Error> {
        let def = self.def();
        for (name, a) in &args {
            if self.constants.contains_key(name) {
                return Err(Error::Input {
                    name: name.clone(),
                    message: format!(
                        "argument `{name}` was declared constant when the def was compiled; a call leaves it out"
                    ),
                });
            }
            check_arg(def, name, a)?;
        }
        let missing: Vec<String> = def
            .params
            .iter()
            .filter(|p| !args.contains_key(p.name()) && !self.constants.contains_key(p.name()))
            .map(|p| format!("`{}`", p.name()))
            .collect();
        if let Some(first) = missing.first() {
            return Err(Error::Input {
                name: first.trim_matches('`').to_string(),
                message: format!(
                    "def `{}` is called without {}",
                    def.name,
                    missing.join(", ")
                ),
            });
        }
        // The constants' shapes bind sizes too; a call without constants
        // copies nothing.
        let all = if self.constants.is_empty() {
            Cow::Borrowed(&args)
        } else {
            let mut all = self.constants.clone();
            all.extend(args.iter().map(|(k, v)| (k.clone(), v.clone())));
            Cow::Owned(all)
        };
        let sizes =
            interp::bind_sizes(def, &all, &self.given).map_err(|e| Error::Sizes(e.message))?;
        let mut key: Vec<(String, i64)> = sizes.iter().map(|(k, v)| (k.clone(), *v)).collect();
        key.sort();
        let spec = self.instances.get_or_build(key, || {
            Specialized::build(
                &self.source,
                def,
                &sizes,
                self.constants.clone(),
                &self.setup,
                Some((&args, &self.given)),
                notes,
            )
        })?;
        spec.run(&self.source, def, &args, &self.given)
    }
}

/// Whether `a` fits parameter `name` of `def`: a tensor of its element
/// type and rank, or a scalar.
fn check_arg(def: &Def, name: &str, a: &Arg) -> Result<(), Error> {
    let input = |message: String| Error::Input {
        name: name.to_string(),
        message,
    };
    match (bind::param(def, name)?, a) {
        (Param::Tensor(t), Arg::Tensor(x)) => {
            let decl = bind::declaration(def, t)?;
            if x.dtype() != decl.dtype {
                return Err(input(format!(
                    "argument `{t}` is {}, but `{t}` is {}{}",
                    x.dtype(),
                    decl.dtype,
                    show_dims(&decl.shape)
                )));
            }
            if x.rank() != decl.shape.len() {
                return Err(Error::Shape {
                    name: name.to_string(),
                    message: format!(
                        "argument `{t}` has shape {}, but `{t}` is {}{} (rank {})",
                        tensor::show_tuple(x.shape()),
                        decl.dtype,
                        show_dims(&decl.shape),
                        decl.shape.len()
                    ),
                });
            }
            Ok(())
        }
        (Param::Tensor(t), Arg::Scalar(_)) => Err(input(format!(
            "argument `{t}` is a number, but `{t}` is a tensor"
        ))),
        (Param::Scalar { dtype, .. }, Arg::Tensor(x)) => Err(input(format!(
            "argument `{name}` is a tensor of shape {}, but `{name}` is a {dtype} scalar",
            tensor::show_tuple(x.shape())
        ))),
        (Param::Scalar { .. }, Arg::Scalar(_)) => Ok(()),
    }
}

fn show_dims(shape: &[ir::SizeExpr]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("({})", dims.join(", "))
}
