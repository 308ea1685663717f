//! Gives the runtime a build identity: a hash of the sources that decide
//! which kernel a program compiles to (lowering, passes, pipelines, the
//! runtime's own marking of library steps). The compiled-program cache
//! keys its entries with it, so a kernel saved by a build whose passes
//! differ is never loaded by this one.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::Hasher;
use std::path::{Path, PathBuf};

/// The directories, relative to this crate, whose files are hashed.
const SOURCES: &[&str] = &["src", "../kernel/src", "../kernel/pipelines", "../ir/src"];

fn main() {
    let mut files = Vec::new();
    for dir in SOURCES {
        println!("cargo:rerun-if-changed={dir}");
        collect(Path::new(dir), &mut files);
    }
    // Sorted, so that the identity does not depend on directory order.
    files.sort();
    let mut hash = DefaultHasher::new();
    for f in &files {
        hash.write(f.to_string_lossy().as_bytes());
        let bytes = fs::read(f).unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
        hash.write_usize(bytes.len());
        hash.write(&bytes);
    }
    println!(
        "cargo:rustc-env=TESSERA_RUNTIME_BUILD={:016x}",
        hash.finish()
    );
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}
