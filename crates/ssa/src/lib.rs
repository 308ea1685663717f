//! tessera's imperative frontend: a PyTorch-style subset of Python,
//! functionalized by TensorSSA's conversion into comprehensions with loop
//! and branch regions.
//!
//! [`functionalize`] runs the whole path: Ruff's parser reads the file,
//! [`frontend::trace`] builds the imperative graph of one def at its
//! arguments' shapes, [`convert::convert`] removes views and mutations
//! (Algorithm 1), and [`emit::emit`] writes the result as an `ir::Def`
//! that the interpreter runs and the compiler lowers.

pub mod convert;
pub mod emit;
pub mod error;
pub mod frontend;
pub mod fuse;
pub mod graph;
pub mod hoist;
pub mod layout;
pub mod parallelize;
pub mod simplify;
pub mod split;

pub use convert::Removed;
pub use error::Error;
pub use frontend::{Annotation, Arg, Dim, Module};

/// A def functionalized: the program (one def), and the mutations the
/// conversion removed.
#[derive(Clone, Debug)]
pub struct Functionalized {
    pub program: ir::Program,
    pub removed: Vec<Removed>,
}

/// Parses `source`, traces def `name` at `args` and converts it.
pub fn functionalize(module: &Module, name: &str, args: &[Arg]) -> Result<Functionalized, Error> {
    let mut g = frontend::trace(module, name, args)?;
    let removed = convert::convert(&mut g);
    let def = emit::emit(&g)?;
    let program = ir::Program { defs: vec![def] };
    if let Err(errs) = ir::verify_program(&program) {
        return Err(Error::new(
            graph::Span::default(),
            format!(
                "internal error: the converted program fails the IR verifier:\n  {}\n{}",
                errs.join("\n  "),
                ir::print_program(&program)
            ),
        ));
    }
    Ok(Functionalized { program, removed })
}
