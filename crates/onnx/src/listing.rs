//! The operators and operator sets tessera imports, as the README lists
//! them: written from the importers' own table ([`crate::SUPPORTED`]) and
//! the versions each implements (`versions`), so that the list cannot
//! drift from the code (`tests/readme.rs` compares the README's section
//! with [`operators`]; `BLESS=1` rewrites it).

use crate::versions;

/// The README's section, between its markers: the operator sets, then
/// each operator with the versions of its schema the importer implements.
pub fn operators() -> String {
    let mut items = Vec::new();
    for op in crate::SUPPORTED {
        let implemented: Vec<String> = versions::implemented(op)
            .iter()
            .map(ToString::to_string)
            .collect();
        items.push(format!("`{op}` ({})", implemented.join(", ")));
    }
    // Lines of at most 100 characters, items whole.
    let mut lines = vec![String::new()];
    for item in items {
        let last = lines.last_mut().expect("one line at least");
        if !last.is_empty() && last.len() + item.len() + 2 > 100 {
            lines.push(item);
        } else {
            if !last.is_empty() {
                last.push_str(", ");
            }
            last.push_str(&item);
        }
    }
    format!(
        "Operator sets {} to {} of the default domain (`ai.onnx`); {} operators, each with the\n\
         versions of its schema the importer implements (a node follows the newest version not newer\n\
         than its model's operator set):\n\n{}.\n",
        versions::OLDEST,
        versions::NEWEST,
        crate::SUPPORTED.len(),
        lines.join(",\n")
    )
}
