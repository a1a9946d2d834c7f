//! Bounds on YAML text, checked before it is deserialized.
//!
//! serde_yaml 0.9 first parses a whole document into events, then deserializes; its own guards
//! (a recursion limit of 128 while deserializing, and at most 100 alias replays per event) come
//! too late or count the wrong thing: parsing 100,000 nested levels takes minutes, and 20,000
//! aliases of one pod carrying a 100 KB annotation expand a 180 KB file to gigabytes. So text
//! is scanned first with a streaming YAML parser (`saphyr-parser`: safe Rust, maintained, MIT or
//! Apache-2.0, emits events one at a time so the scan stops at the first excess) that
//! tracks nesting depth and the size every alias adds.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// Deepest nesting of sequences and mappings accepted; the same limit serde_json and serde_yaml
/// apply while deserializing, so nothing they would accept is refused for depth.
pub const MAX_DEPTH: usize = 128;

/// Size every node counts for besides its text, so that empty nodes are not free.
const NODE_COST: u64 = 8;

/// What aliases may add to a document at least, whatever its size (bytes-equivalent).
const MIN_ALIAS_BUDGET: u64 = 64 * 1024;

/// Why YAML text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlLimitError {
    /// Sequences and mappings nested deeper than [`MAX_DEPTH`].
    #[error("line {line}: nested deeper than {MAX_DEPTH} levels")]
    TooDeep {
        /// 1-based line of the first node over the limit.
        line: usize,
    },
    /// Aliases would expand the text by more than its own size (plus 64 KiB).
    #[error(
        "line {line}: aliases expand the document beyond {limit} bytes (at most the size of the text, or 64 KiB, may be added by aliases)"
    )]
    TooMuchAliasing {
        /// 1-based line of the alias that went over.
        line: usize,
        /// The budget that was exceeded.
        limit: u64,
    },
    /// An alias to a node that contains it.
    #[error("line {line}: an alias refers to a node that contains it")]
    RecursiveAlias {
        /// 1-based line of the alias.
        line: usize,
    },
    /// The text is not YAML.
    #[error("{0}")]
    Syntax(String),
}

/// Checks that `text` nests at most [`MAX_DEPTH`] levels and that its aliases add at most
/// `max(text.len(), 64 KiB)` bytes-equivalent when expanded (each node counts its text plus 8).
/// Documents without aliases are never refused for size. Work is linear in the text and stops
/// at the first excess.
pub fn check(text: &str) -> Result<(), YamlLimitError> {
    let budget = (text.len() as u64).max(MIN_ALIAS_BUDGET);
    // Sizes of complete anchored nodes, by anchor id; `None` while the node is still open.
    let mut anchors: HashMap<usize, Option<u64>> = HashMap::new();
    // Open collections: (anchor id, size so far).
    let mut open: Vec<(usize, u64)> = Vec::new();
    let mut added: u64 = 0;
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| {
            // The scanner reads ahead inside flow collections and stops at 255 open ones
            // itself, possibly before the parser reports depth MAX_DEPTH: the same refusal.
            if e.info() == "recursion limit exceeded" {
                YamlLimitError::TooDeep {
                    line: e.marker().line(),
                }
            } else {
                YamlLimitError::Syntax(e.to_string())
            }
        })?;
        let line = span.start.line();
        let node = match event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if open.len() >= MAX_DEPTH {
                    return Err(YamlLimitError::TooDeep { line });
                }
                if anchor != 0 {
                    anchors.insert(anchor, None);
                }
                open.push((anchor, NODE_COST));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => open.pop(),
            Event::Scalar(value, _, anchor, _) => Some((anchor, value.len() as u64 + NODE_COST)),
            Event::Alias(anchor) => {
                let size = match anchors.get(&anchor) {
                    Some(Some(size)) => *size,
                    Some(None) => return Err(YamlLimitError::RecursiveAlias { line }),
                    // The parser refuses unknown anchors itself; count the alias as a node.
                    None => NODE_COST,
                };
                added = added.saturating_add(size);
                if added > budget {
                    return Err(YamlLimitError::TooMuchAliasing {
                        line,
                        limit: budget,
                    });
                }
                Some((0, size))
            }
            Event::DocumentEnd => {
                // Anchors are scoped to their document.
                anchors.clear();
                continue;
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart(_) => {
                continue;
            }
        };
        if let Some((anchor, size)) = node {
            if anchor != 0 {
                anchors.insert(anchor, Some(size));
            }
            if let Some(parent) = open.last_mut() {
                parent.1 = parent.1.saturating_add(size);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_documents_pass() {
        check("a: 1\nb: [x, y, {c: d}]\n---\ne: &x {f: g}\nh: *x\n").unwrap();
        check("").unwrap();
        check(&"[".repeat(MAX_DEPTH)).unwrap_err(); // unterminated: a syntax error
        let nested = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        check(&nested).unwrap();
    }

    #[test]
    fn depth_beyond_the_limit_is_refused_early() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(check(&deep), Err(YamlLimitError::TooDeep { line: 1 }));
        let deep_map = format!("a: {}", "{a: ".repeat(100_000));
        assert_eq!(check(&deep_map), Err(YamlLimitError::TooDeep { line: 1 }));
        let mut block = String::new();
        for i in 0..=MAX_DEPTH {
            block.push_str(&format!("{}k:\n", " ".repeat(i)));
        }
        assert!(matches!(check(&block), Err(YamlLimitError::TooDeep { .. })));
    }

    #[test]
    fn alias_amplification_is_refused() {
        // 20 aliases of a 100 KB scalar: the text is ~100 KB, the expansion ~2 MB.
        let text = format!(
            "a: &big {}\nb: [{}]\n",
            "x".repeat(100_000),
            vec!["*big"; 20].join(", ")
        );
        assert!(matches!(
            check(&text),
            Err(YamlLimitError::TooMuchAliasing { line: 2, .. })
        ));
        // Billion laughs: each level doubles; refused long before the top.
        let mut laughs = String::from("l0: &l0 [lol, lol]\n");
        for i in 1..40 {
            laughs.push_str(&format!("l{i}: &l{i} [*l{p}, *l{p}]\n", p = i - 1));
        }
        assert!(matches!(
            check(&laughs),
            Err(YamlLimitError::TooMuchAliasing { .. })
        ));
    }

    #[test]
    fn modest_reuse_is_accepted() {
        let text = format!("a: &v {}\nb: *v\nc: *v\n", "y".repeat(1000));
        check(&text).unwrap();
    }

    #[test]
    fn anchors_do_not_leak_between_documents() {
        // An alias in a later document cannot refer to an earlier document's anchor (serde_yaml
        // refuses it as unknown), so it does not count that anchor's size.
        let text = format!(
            "a: &big {}\n---\nb: [{}]\n",
            "x".repeat(100_000),
            vec!["*big"; 20].join(", ")
        );
        check(&text).unwrap();
    }
}
