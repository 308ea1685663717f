//! Reading inputs: source files, `--size` bindings.

use std::collections::HashMap;
use std::path::Path;

/// Reads a source file; the error is a ready-to-print `error:` message.
pub fn read_source(path: &Path) -> Result<(String, String), String> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("error: cannot read `{name}`: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        format!("error: `{name}` is not valid UTF-8 (byte {at})")
    })?;
    Ok((name, text))
}

/// Parses `SYM=N` bindings.
pub fn parse_sizes(items: &[String]) -> Result<HashMap<String, i64>, String> {
    let mut out = HashMap::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else {
            return Err(format!("error: `--size {it}` is not of the form SYM=N"));
        };
        let v: i64 = v
            .trim()
            .parse()
            .map_err(|_| format!("error: `--size {it}`: `{v}` is not an integer"))?;
        if v < 1 {
            return Err(format!("error: `--size {it}`: sizes must be positive"));
        }
        if out.insert(k.trim().to_string(), v).is_some() {
            return Err(format!("error: size `{k}` is given twice"));
        }
    }
    Ok(out)
}
