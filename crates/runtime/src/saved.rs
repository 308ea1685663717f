//! The compiled-program cache: the kernel a def becomes after lowering,
//! library marking and the pass pipeline, saved as kernel IR text beside
//! the kernel cache's objects, so that a warm start reads it back instead
//! of lowering, running the passes and proving them again.
//!
//! An entry is `KEY.program` in the kernel cache's directory. The key
//! hashes everything that decides the kernel: the program as printed by
//! `ir`, the def, the bound sizes, the passes, the target, whether
//! matmuls go to the library, and the runtime's build identity (a hash of
//! the lowering's, the passes' and the runtime's sources, made by
//! `build.rs`), so no entry is read by a build that would lower
//! differently. The entry's first line is the SHA-256 of the rest.
//!
//! Requires: nothing of the directory's contents. Guarantees: [`load`]
//! returns a kernel only when the entry's hash matches its text and the
//! text parses; any other entry (missing, truncated, altered) is a miss
//! and is overwritten by the next [`save`]. Entries are written atomically
//! (a scratch file renamed into place), so a reader sees an old entry or a
//! whole new one. Failing to save is not an error: the next run compiles
//! again.

use std::collections::HashMap;
use std::path::PathBuf;

use codegen::cache::{hash_parts, read_if_present, write_atomically, KernelCache};
use ir::Program;
use kernel::Block;

use crate::Options;

/// Bumped when the entry format changes.
const FORMAT: &str = "tessera-program 1";

/// The key of `def` of `program` compiled for `sizes` with `options`.
pub fn key(
    program: &Program,
    def: &str,
    sizes: &HashMap<String, i64>,
    options: &Options,
) -> String {
    let mut bound: Vec<(&String, &i64)> = sizes.iter().collect();
    bound.sort();
    let sizes_text: String = bound.iter().map(|(n, v)| format!("{n}={v};")).collect();
    let verify = format!("{:?}", options.verify);
    hash_parts(&[
        FORMAT,
        env!("TESSERA_RUNTIME_BUILD"),
        &ir::print_program(program),
        def,
        &sizes_text,
        &options.passes.join(","),
        &options.target.codegen_text(),
        if options.library {
            "library"
        } else {
            "generated"
        },
        &verify,
        &kernel::print_options(&options.kernel_options),
    ])
}

fn path(cache: &KernelCache, key: &str) -> PathBuf {
    cache.dir().join(format!("{key}.program"))
}

/// The kernel saved under `key`, when there is a sound entry.
pub fn load(cache: &KernelCache, key: &str) -> Option<Block> {
    let bytes = read_if_present(&path(cache, key)).ok()??;
    let text = String::from_utf8(bytes).ok()?;
    let (hash, kernel) = text.split_once('\n')?;
    if hash != hash_parts(&[kernel]) {
        return None;
    }
    kernel::parse_block(kernel).ok()
}

/// Saves `block` under `key`, ignoring failure (see the module doc).
pub fn save(cache: &KernelCache, key: &str, block: &Block) {
    let kernel = kernel::print_block(block);
    let text = format!("{}\n{kernel}", hash_parts(&[&kernel]));
    // A cache that cannot be written only costs the next run its time.
    let _ = write_atomically(&path(cache, key), &text);
}
