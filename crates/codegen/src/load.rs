//! Loading compiled kernels into the process. This is the only module of
//! tessera that uses `unsafe`: opening a shared object runs its
//! initializers, and calling into it trusts its signatures. Each `unsafe`
//! block says why it is sound.

#![allow(unsafe_code)]

use std::path::Path;

/// Opens the shared object at `path`.
pub fn open(path: &Path) -> Result<libloading::Library, String> {
    // SAFETY: the objects tessera opens are ones it generated and compiled
    // itself (C without initializers or global constructors), so loading
    // runs no code of anyone else's.
    unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot load `{}`: {e}", path.display()))
}
