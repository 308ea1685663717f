//! The kernel passes, one per file, and the registry of them.

pub mod autotile;
pub mod boundary;
pub mod dce;
pub mod forward;
pub mod fuse;
pub mod inline;
pub mod interchange;
pub mod localize;
pub mod overwrite;
pub mod parallelize;
pub mod prune;
pub mod scalarize;
pub mod solve;
pub mod unroll;
pub mod vectorize;
pub mod view;

use crate::Pass;

/// Every pass; pipelines name them.
pub fn all() -> Vec<Box<dyn Pass>> {
    vec![
        Box::new(inline::Inline),
        Box::new(solve::Solve),
        Box::new(prune::Prune),
        Box::new(overwrite::Overwrite),
        Box::new(view::View),
        Box::new(autotile::Autotile),
        Box::new(boundary::Boundary),
        Box::new(dce::Dce),
        Box::new(forward::Forward),
        Box::new(fuse::Fuse),
        Box::new(parallelize::Parallelize),
        Box::new(vectorize::Vectorize),
        Box::new(interchange::Interchange),
        Box::new(scalarize::Scalarize),
        Box::new(localize::Localize),
        Box::new(unroll::Unroll),
    ]
}
