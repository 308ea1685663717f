//! Reading inputs for the commands that take a file and `--size`
//! bindings: the engine's, with its errors as the messages to print.

use std::collections::HashMap;
use std::path::Path;

/// Reads a source file; the error is a ready-to-print `error:` message.
pub fn read_source(path: &Path) -> Result<(String, String), String> {
    engine::source::read_text(path).map_err(|e| e.to_string())
}

/// Parses `SYM=N` bindings.
pub fn parse_sizes(items: &[String]) -> Result<HashMap<String, i64>, String> {
    engine::bind::parse_sizes(items).map_err(|e| e.to_string())
}
