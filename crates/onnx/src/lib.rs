//! tessera's ONNX importer: an `.onnx` model becomes a TC program, the
//! operator prelude plus one def, `model`, whose statements call prelude
//! defs with the nodes' attributes as arguments.
//!
//! `load` reads and checks the file, `import` sorts and imports the graph
//! (`ops/` has one importer per operator family), `build` holds the def
//! being written and `forms` the defs generated for it. Shapes are
//! concrete: symbolic input dimensions are bound by the caller.

mod build;
mod cut;
mod error;
mod forms;
mod import;
mod info;
mod listing;
mod load;
mod ops;
mod proto;
mod signature;
mod step;
mod versions;

pub use build::Packing;
pub use cut::cut;
pub use error::{Error, ErrorKind};
pub use import::{check_operators, import, import_loaded, Model, Port, MODEL_DEF, PRELUDE};
pub use info::{info, print_info, Info};
pub use listing::operators;
pub use load::{load, Loaded, OPSETS};
pub use ops::SUPPORTED;
pub use signature::{onnx_type_name, signature, Declared, Dim, Signature};
pub use step::{Compute, Step};
