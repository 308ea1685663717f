//! An ONNX model whose shapes depend on values it computes, imported in
//! stages: where an operator needs the value of a tensor the model
//! computes (the data of `NonZero`, `Compress` or `Unique`, a bound of
//! `Range`, the pads of `Pad`, computed from the inputs), the part of the
//! model that computes it ([`onnx::cut`]) is compiled and run first, and
//! the whole model is imported with that value, which fixes the shapes of
//! what follows. The program is then specialized on the value, as it is
//! on the inputs' sizes.
//!
//! [`crate::Model`] does the same for each run, keeping the parts and the
//! programs by the values; this is the one-run form `tessera run` uses.
//!
//! Guarantees: the part runs on the same inputs with the same setup as the
//! whole would; an import that asks again for values it was given is an
//! internal error, never a loop.

use std::collections::HashMap;
use std::path::Path;

use tensor::Tensor;

use crate::{Error, Model, Note, Setup, Sizes, Source};

/// The tensors of a part (`part`) and those an import asked for
/// (`names`, in its error `message`), sorted; an error when the import
/// asked only for tensors the part computes, whose values it was given.
pub(crate) fn grown(
    mut part: Vec<String>,
    names: Vec<String>,
    message: &str,
) -> Result<Vec<String>, Error> {
    let before = part.len();
    part.extend(names);
    part.sort();
    part.dedup();
    if part.len() == before {
        return Err(Error::Internal(format!(
            "the import asks again for values it was given: {message}"
        )));
    }
    Ok(part)
}

/// How a part of the model runs.
pub struct Run<'a> {
    /// The run's inputs: every graph input, by name (called only when a
    /// part must run).
    pub feed: &'a mut dyn FnMut() -> Result<Vec<(String, Tensor)>, Error>,
    pub setup: &'a Setup,
}

impl std::fmt::Debug for Run<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run").field("setup", self.setup).finish()
    }
}

/// [`Source::load_onnx`] for a run: the values of the tensors the model
/// computes that the import needs come from running the part of the model
/// that computes them as `run` says, and go into the import beside
/// `values`. `def` is as for [`Source::load_onnx`].
pub fn load_onnx(
    path: &Path,
    def: Option<&str>,
    sizes: &Sizes,
    shapes: &HashMap<String, Vec<usize>>,
    values: &HashMap<String, Tensor>,
    run: Run,
    notes: &mut Vec<Note>,
) -> Result<Source, Error> {
    let mut values = values.clone();
    let mut part: Vec<String> = Vec::new();
    loop {
        match Source::load_onnx(path, def, sizes, shapes, &values) {
            Err(Error::NeedsComputed { names, message }) => {
                part = grown(part, names, &message)?;
                let stage = Model::open_part(
                    path,
                    part.clone(),
                    sizes.clone(),
                    run.setup.clone(),
                    None,
                    notes,
                )?;
                let feed = (run.feed)()?;
                // A caller may make up inputs not given (random values);
                // these decide shapes, so they must be given.
                if let Some(i) = stage
                    .signature
                    .inputs
                    .iter()
                    .find(|i| !feed.iter().any(|(n, _)| *n == i.name))
                {
                    return Err(Error::Input {
                        name: i.name.clone(),
                        message: format!(
                            "the model's input `{}` is not given: the shapes of what the model computes depend on its values ({message})",
                            i.name
                        ),
                    });
                }
                values.extend(stage.run(feed, None, notes)?);
            }
            result => return result,
        }
    }
}
