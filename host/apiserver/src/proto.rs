//! Just enough Kubernetes protobuf decoding for typed kubectl generators that send protobuf
//! bodies with nothing but metadata (`kubectl create namespace NAME`). Anything else is refused
//! by the caller with 415.

use serde_json::{Map, Value, json};

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i)?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn fields(b: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let f = match key & 7 {
            0 => Field::Varint(varint(b, &mut i)?),
            2 => {
                let len = usize::try_from(varint(b, &mut i)?).ok()?;
                let s = b.get(i..i.checked_add(len)?)?;
                i += len;
                Field::Bytes(s)
            }
            _ => return None,
        };
        out.push((key >> 3, f));
    }
    Some(out)
}

/// A zero value as Go's protobuf encoder writes it: 0, "", or a message of zero values.
fn is_zero(f: &Field<'_>) -> bool {
    match f {
        Field::Varint(v) => *v == 0,
        Field::Bytes(b) => {
            b.is_empty() || fields(b).is_some_and(|fs| fs.iter().all(|(_, x)| is_zero(x)))
        }
    }
}

fn string(f: &Field<'_>) -> Option<String> {
    match f {
        Field::Bytes(b) => String::from_utf8(b.to_vec()).ok(),
        Field::Varint(_) => None,
    }
}

fn map_entry(f: &Field<'_>) -> Option<(String, Value)> {
    let Field::Bytes(b) = f else { return None };
    let mut k = String::new();
    let mut v = String::new();
    for (n, x) in fields(b)? {
        match n {
            1 => k = string(&x)?,
            2 => v = string(&x)?,
            _ => return None,
        }
    }
    Some((k, json!(v)))
}

/// Decodes a `k8s\0`-enveloped protobuf Namespace that carries only name, generateName,
/// labels and annotations. `None` for anything else.
pub(crate) fn decode_minimal(body: &[u8]) -> Option<Value> {
    let unknown = body.strip_prefix(b"k8s\0")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), None);
    for (n, f) in fields(unknown)? {
        match (n, &f) {
            (1, Field::Bytes(tm)) => {
                for (m, x) in fields(tm)? {
                    match m {
                        1 => api_version = string(&x)?,
                        2 => kind = string(&x)?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(r)) => raw = Some(*r),
            (3 | 4, _) => {}
            _ => return None,
        }
    }
    if api_version != "v1" || kind != "Namespace" {
        return None;
    }
    let mut meta = Map::new();
    let raw = raw?;
    for (n, f) in fields(raw)? {
        match (n, &f) {
            (1, Field::Bytes(m)) => {
                let (mut labels, mut annotations) = (Map::new(), Map::new());
                for (k, x) in fields(m)? {
                    match k {
                        1 => {
                            meta.insert("name".into(), json!(string(&x)?));
                        }
                        2 => {
                            meta.insert("generateName".into(), json!(string(&x)?));
                        }
                        11 => {
                            let (key, v) = map_entry(&x)?;
                            labels.insert(key, v);
                        }
                        12 => {
                            let (key, v) = map_entry(&x)?;
                            annotations.insert(key, v);
                        }
                        _ if is_zero(&x) => {}
                        _ => return None,
                    }
                }
                if !labels.is_empty() {
                    meta.insert("labels".into(), Value::Object(labels));
                }
                if !annotations.is_empty() {
                    meta.insert("annotations".into(), Value::Object(annotations));
                }
            }
            // spec / status with only zero values (Go encodes them)
            (2 | 3, f) if is_zero(f) => {}
            _ => return None,
        }
    }
    Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(field: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![(field << 3) | 2, payload.len() as u8];
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn namespace() {
        let mut tm = msg(1, b"v1");
        tm.extend(msg(2, b"Namespace"));
        let mut om = msg(1, b"demo");
        let mut entry = msg(1, b"a");
        entry.extend(msg(2, b"b"));
        om.extend(msg(11, &entry));
        let mut ns = msg(1, &om);
        ns.extend(msg(2, b""));
        ns.extend(msg(3, b""));
        let mut body = b"k8s\0".to_vec();
        body.extend(msg(1, &tm));
        body.extend(msg(2, &ns));
        let v = decode_minimal(&body).unwrap();
        assert_eq!(v["metadata"], json!({"name": "demo", "labels": {"a": "b"}}));
        assert!(decode_minimal(b"k8s\0\x0a\x02").is_none());
    }
}
