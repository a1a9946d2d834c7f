//! Kubernetes label selectors in their string form (`a=b,c!=d,e in (x,y),f notin (z),g,!h`),
//! parsed once for both weir (`--service-selector`) and weir-apiserver (`?labelSelector=`).
//!
//! The parsed form is kube-core's [`Selector`] of [`Expression`]s, so matching is kube-rs's
//! own. kube-core has no parser for the string form (it only prints it), hence the parser
//! here; it follows kube-apiserver's grammar and words its errors as kube-apiserver does
//! (weir-apiserver answers them with 400 Bad Request). The two numeric operators
//! kube-apiserver also accepts, `key>N` and `key<N`, have no kube-core expression and are kept
//! beside the selector.

use std::collections::BTreeMap;
use std::fmt;

pub use kube_core::{Expression, Selector, SelectorExt};

/// A parsed label selector: every requirement must hold. Empty selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// The requirements kube-core models: `=`, `==`, `!=`, `in`, `notin`, `key`, `!key`.
    pub selector: Selector,
    /// `key>N` and `key<N`.
    pub numeric: Vec<Numeric>,
}

/// `key>N` (`greater`) or `key<N`: the label's value, read as an integer, is above or below
/// `bound`. A missing or non-integer value does not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numeric {
    /// The label key.
    pub key: String,
    /// `>` when true, `<` when false.
    pub greater: bool,
    /// The integer compared with.
    pub bound: i64,
}

/// A selector that does not parse; the message is kube-apiserver's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

impl LabelSelector {
    /// Parses the string form. Whitespace around tokens is ignored; an empty or blank string
    /// selects everything.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        Parser {
            lexer: Lexer { text, pos: 0 },
        }
        .selector()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector.matches(labels)
            && self.numeric.iter().all(|n| {
                labels
                    .get(&n.key)
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| if n.greater { v > n.bound } else { v < n.bound })
            })
    }

    /// Whether it has no requirement at all.
    pub fn selects_all(&self) -> bool {
        self.selector.selects_all() && self.numeric.is_empty()
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Self, SelectorError> {
        Self::parse(text)
    }
}

impl fmt::Display for LabelSelector {
    /// The string form (kube-core's for its expressions), which parses back to the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.selector.selects_all() {
            parts.push(self.selector.to_string());
        }
        for n in &self.numeric {
            let op = if n.greater { '>' } else { '<' };
            parts.push(format!("{}{op}{}", n.key, n.bound));
        }
        f.write_str(&parts.join(","))
    }
}

/// Is `s` a DNS-1123 subdomain: dot-separated lowercase alphanumeric labels with inner `-`,
/// at most 253 characters?
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                && !p.starts_with('-')
                && !p.ends_with('-')
        })
}

/// A label value, or a key's name part: at most 63 characters, ASCII alphanumerics with `-`,
/// `_`, `.` inside, starting and ending with an alphanumeric.
pub fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Is `key` a qualified name (what a label key must be): `[prefix/]name`, the prefix a DNS
/// subdomain and the name a [label name](is_label_name)?
pub fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    is_label_name(name) && prefix.is_none_or(is_dns_subdomain)
}

/// A label key is a qualified name: `[prefix/]name`, the prefix a DNS subdomain.
fn check_key(key: &str) -> Result<(), SelectorError> {
    if is_qualified_name(key) {
        return Ok(());
    }
    Err(SelectorError(format!(
        "key: Invalid value: {key:?}: a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )))
}

fn check_value(value: &str) -> Result<(), SelectorError> {
    if value.is_empty() || is_label_name(value) {
        return Ok(());
    }
    Err(SelectorError(format!(
        "values[0]: Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
    )))
}

/// A token of the string form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Ident(&'a str),
    /// `!`
    Not,
    /// `=` or `==`
    Equals,
    /// `!=`
    NotEquals,
    In,
    NotIn,
    Open,
    Close,
    Comma,
    Greater,
    Less,
    End,
}

impl<'a> Token<'a> {
    /// The token as written, for error messages.
    fn literal(self) -> &'a str {
        match self {
            Token::Ident(s) => s,
            Token::Not => "!",
            Token::Equals => "=",
            Token::NotEquals => "!=",
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Open => "(",
            Token::Close => ")",
            Token::Comma => ",",
            Token::Greater => ">",
            Token::Less => "<",
            Token::End => "",
        }
    }
}

/// Characters that end an identifier.
const SPECIAL: &[char] = &['!', '=', '(', ')', ',', '<', '>'];

#[derive(Clone)]
struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn next(&mut self) -> Token<'a> {
        let rest = self.text[self.pos..].trim_start();
        self.pos = self.text.len() - rest.len();
        const SYMBOLS: [(&str, Token<'static>); 9] = [
            ("!=", Token::NotEquals),
            ("==", Token::Equals),
            ("!", Token::Not),
            ("=", Token::Equals),
            ("(", Token::Open),
            (")", Token::Close),
            (",", Token::Comma),
            (">", Token::Greater),
            ("<", Token::Less),
        ];
        if rest.is_empty() {
            return Token::End;
        }
        for (symbol, token) in SYMBOLS {
            if rest.starts_with(symbol) {
                self.pos += symbol.len();
                return token;
            }
        }
        let len = rest
            .find(|c: char| c.is_whitespace() || SPECIAL.contains(&c))
            .unwrap_or(rest.len());
        self.pos += len;
        match &rest[..len] {
            "in" => Token::In,
            "notin" => Token::NotIn,
            word => Token::Ident(word),
        }
    }

    fn peek(&self) -> Token<'a> {
        self.clone().next()
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
}

fn unparsable(reason: impl fmt::Display) -> SelectorError {
    SelectorError(format!("unable to parse requirement: {reason}"))
}

impl<'a> Parser<'a> {
    fn selector(mut self) -> Result<LabelSelector, SelectorError> {
        let mut parsed = LabelSelector::default();
        if self.lexer.peek() == Token::End {
            return Ok(parsed);
        }
        loop {
            self.requirement(&mut parsed)?;
            match self.lexer.next() {
                Token::End => return Ok(parsed),
                Token::Comma => match self.lexer.peek() {
                    Token::Ident(_) | Token::Not => {}
                    other => {
                        return Err(unparsable(format_args!(
                            "found '{}', expected: identifier after ','",
                            other.literal()
                        )));
                    }
                },
                other => {
                    return Err(unparsable(format_args!(
                        "found '{}', expected: ','",
                        other.literal()
                    )));
                }
            }
        }
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        match self.lexer.next() {
            Token::Ident(key) => {
                check_key(key)?;
                Ok(key.to_string())
            }
            other => Err(unparsable(format_args!(
                "found '{}', expected: identifier",
                other.literal()
            ))),
        }
    }

    fn requirement(&mut self, parsed: &mut LabelSelector) -> Result<(), SelectorError> {
        if self.lexer.peek() == Token::Not {
            self.lexer.next();
            let key = self.key()?;
            parsed.selector.extend(Expression::DoesNotExist(key));
            return Ok(());
        }
        let key = self.key()?;
        let expression = match self.lexer.peek() {
            Token::End | Token::Comma => Expression::Exists(key),
            Token::Equals => {
                self.lexer.next();
                Expression::Equal(key, self.exact_value()?)
            }
            Token::NotEquals => {
                self.lexer.next();
                Expression::NotEqual(key, self.exact_value()?)
            }
            Token::In | Token::NotIn => {
                let not = self.lexer.next() == Token::NotIn;
                let values = self.values()?;
                if not {
                    Expression::NotIn(key, values)
                } else {
                    Expression::In(key, values)
                }
            }
            Token::Greater | Token::Less => {
                let greater = self.lexer.next() == Token::Greater;
                let value = match self.lexer.next() {
                    Token::Ident(v) => v,
                    other => other.literal(),
                };
                let bound = value.parse().map_err(|_| {
                    unparsable(format_args!(
                        "for 'Gt', 'Lt' operators, the value must be an integer: {value}"
                    ))
                })?;
                parsed.numeric.push(Numeric {
                    key,
                    greater,
                    bound,
                });
                return Ok(());
            }
            other => {
                return Err(unparsable(format_args!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    other.literal()
                )));
            }
        };
        parsed.selector.extend(expression);
        Ok(())
    }

    /// The value after `=`, `==` or `!=`: empty when the requirement ends there.
    fn exact_value(&mut self) -> Result<String, SelectorError> {
        match self.lexer.peek() {
            Token::End | Token::Comma => Ok(String::new()),
            Token::Ident(value) => {
                self.lexer.next();
                check_value(value)?;
                Ok(value.to_string())
            }
            other => Err(unparsable(format_args!(
                "found '{}', expected: identifier",
                other.literal()
            ))),
        }
    }

    /// `(a,b,...)` after `in` or `notin`. An empty entry is the empty value, so `()` is the
    /// set holding only "".
    fn values(&mut self) -> Result<std::collections::BTreeSet<String>, SelectorError> {
        let open = self.lexer.next();
        if open != Token::Open {
            return Err(unparsable(format_args!(
                "found '{}', expected: '('",
                open.literal()
            )));
        }
        let mut values = std::collections::BTreeSet::new();
        loop {
            let value = match self.lexer.peek() {
                Token::Ident(value) => {
                    self.lexer.next();
                    value
                }
                Token::Comma | Token::Close => "",
                other => {
                    return Err(unparsable(format_args!(
                        "found '{}', expected: ',', ')' or identifier",
                        other.literal()
                    )));
                }
            };
            check_value(value)?;
            values.insert(value.to_string());
            match self.lexer.next() {
                Token::Comma => {}
                Token::Close => return Ok(values),
                other => {
                    return Err(unparsable(format_args!(
                        "found '{}', expected: ',' or ')'",
                        other.literal()
                    )));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|&(k, v)| (k.into(), v.into())).collect()
    }

    fn parse(text: &str) -> LabelSelector {
        LabelSelector::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn equality_based() {
        let s = parse("app=web, tier==x,zone!=b");
        assert_eq!(
            s.selector,
            Selector::from_iter([
                Expression::Equal("app".into(), "web".into()),
                Expression::Equal("tier".into(), "x".into()),
                Expression::NotEqual("zone".into(), "b".into()),
            ])
        );
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "x"), ("zone", "b")])));
        assert!(
            parse("a!=b").matches(&labels(&[])),
            "!= holds for an absent key"
        );
        assert!(parse("a=").matches(&labels(&[("a", "")])), "empty value");
    }

    #[test]
    fn set_based_in_notin_exists_and_not_exists() {
        let s = parse("tier in (a, x),env notin (prod,staging),team,!legacy");
        assert_eq!(
            s.selector,
            Selector::from_iter([
                Expression::In("tier".into(), ["a".into(), "x".into()].into()),
                Expression::NotIn("env".into(), ["prod".into(), "staging".into()].into()),
                Expression::Exists("team".into()),
                Expression::DoesNotExist("legacy".into()),
            ])
        );
        let base = [("tier", "x"), ("team", "")];
        assert!(s.matches(&labels(&base)), "notin holds for an absent key");
        assert!(s.matches(&labels(&[base[0], base[1], ("env", "dev")])));
        assert!(
            !s.matches(&labels(&[base[0], base[1], ("env", "prod")])),
            "notin"
        );
        assert!(!s.matches(&labels(&[("tier", "b"), base[1]])), "in");
        assert!(!s.matches(&labels(&[base[1]])), "in needs the key");
        assert!(!s.matches(&labels(&[base[0]])), "exists");
        assert!(
            !s.matches(&labels(&[base[0], base[1], ("legacy", "")])),
            "!key"
        );
        // `()` is the set of the empty value.
        assert!(parse("a in ()").matches(&labels(&[("a", "")])));
        assert!(!parse("a in ()").matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn numeric_comparisons() {
        let s = parse("replicas>2,replicas<10");
        assert!(s.selector.selects_all());
        assert!(s.matches(&labels(&[("replicas", "5")])));
        assert!(!s.matches(&labels(&[("replicas", "2")])));
        assert!(!s.matches(&labels(&[("replicas", "many")])));
        assert!(!s.matches(&labels(&[])));
        assert_eq!(s.to_string(), "replicas>2,replicas<10");
    }

    #[test]
    fn empty_selects_everything() {
        for text in ["", "  "] {
            let s = parse(text);
            assert!(s.selects_all());
            assert!(s.matches(&labels(&[])));
        }
    }

    #[test]
    fn bad_selectors_are_refused_with_kube_apiserver_wording() {
        for (text, wording) in [
            (
                "a in x",
                "unable to parse requirement: found 'x', expected: '('",
            ),
            (
                "a in (b",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            ("a,,b", "found ',', expected: identifier after ','"),
            ("a,", "found '', expected: identifier after ','"),
            (",a", "found ',', expected: identifier"),
            ("a b", "found 'b', expected: in, notin, =, ==, !=, gt, lt"),
            ("!a=b", "found '=', expected: ','"),
            ("a>b", "the value must be an integer: b"),
            ("bad key=1", "found 'key', expected: in, notin"),
            ("-a=b", "key: Invalid value: \"-a\": a qualified name"),
            ("a/b/c=d", "key: Invalid value: \"a/b/c\""),
            ("Example.com/a=b", "key: Invalid value"),
            ("ä=1", "key: Invalid value"),
            ("a=b_", "values[0]: Invalid value: \"b_\": a valid label"),
            ("a in (b,c$)", "values[0]: Invalid value: \"c$\""),
        ] {
            let err = LabelSelector::parse(text).expect_err(text).to_string();
            assert!(err.contains(wording), "{text}: {err}");
        }
        let long = "a".repeat(64);
        assert!(LabelSelector::parse(&format!("{long}=1")).is_err());
        assert!(LabelSelector::parse(&format!("a={long}")).is_err());
        assert!(LabelSelector::parse(&format!("example.com/{}=1", "a".repeat(63))).is_ok());
    }

    /// A label name; "in" and "notin" are keywords of the string form (as in kube-apiserver's
    /// parser), so never keys or values there.
    fn name() -> impl Strategy<Value = String> {
        "[a-z0-9]([a-z0-9._-]{0,10}[a-z0-9])?"
            .prop_filter("a keyword", |n| n != "in" && n != "notin")
    }

    fn key() -> impl Strategy<Value = String> {
        (proptest::option::of("[a-z]{1,5}(\\.[a-z]{1,5})?"), name()).prop_map(|(p, n)| match p {
            Some(p) => format!("{p}/{n}"),
            None => n,
        })
    }

    fn expression() -> impl Strategy<Value = Expression> {
        let values = || proptest::collection::btree_set(name(), 1..4);
        prop_oneof![
            (key(), name()).prop_map(|(k, v)| Expression::Equal(k, v)),
            (key(), name()).prop_map(|(k, v)| Expression::NotEqual(k, v)),
            (key(), values()).prop_map(|(k, v)| Expression::In(k, v)),
            (key(), values()).prop_map(|(k, v)| Expression::NotIn(k, v)),
            key().prop_map(Expression::Exists),
            key().prop_map(Expression::DoesNotExist),
        ]
    }

    proptest! {
        /// kube-core prints selectors; what it prints parses back to the same selector.
        #[test]
        fn kube_core_string_form_parses_back(exprs in proptest::collection::vec(expression(), 0..6)) {
            let selector = Selector::from_iter(exprs);
            let parsed = LabelSelector::parse(&selector.to_string()).unwrap();
            prop_assert_eq!(parsed.selector, selector);
            prop_assert!(parsed.numeric.is_empty());
        }

        /// Arbitrary text never panics: it parses or is refused.
        #[test]
        fn any_text_parses_or_is_refused(text in "[a-z!=(),<> ./_-]{0,30}") {
            let _ = LabelSelector::parse(&text);
        }
    }
}
