//! The contract fingerprint (RUNTIME.md §2.7) and the contract-set fingerprint (§2.8).

use super::Contract;
use crate::format::address::address;
use crate::format::json::{Object, Value, write_canonical};

/// The `image` tag of the contract-set image (RUNTIME.md §2.8).
pub(crate) const CONTRACT_SET_IMAGE: &str = "reactor.contract-set/1";

/// The eight-line text of RUNTIME.md §2.7.
pub(super) fn contract_fingerprint_text(c: &Contract) -> String {
    format!(
        "id:{}\nname:{}\nkind:{}\nrequires:{}\nmaintains:{}\ncontinuity:{}\nexecution:{}\ncriteria:{}",
        c.id,
        c.name,
        c.kind.as_str(),
        c.body("Requires"),
        c.body("Maintains"),
        c.body("Continuity"),
        c.body("Execution"),
        c.body("Criteria"),
    )
}

/// `sha256:` + hex over the fingerprint text.
pub(super) fn contract_fingerprint(c: &Contract) -> String {
    address(contract_fingerprint_text(c).as_bytes())
}

/// The image value of RUNTIME.md §2.8 step 2.
fn image(contracts: &[Contract]) -> Value {
    let images = contracts
        .iter()
        .map(|c| {
            let sections = c
                .sections
                .iter()
                .map(|s| {
                    let mut o = Object::new();
                    o.push_unique("heading", Value::str(s.heading.as_str()));
                    o.push_unique("body", Value::str(s.body.as_str()));
                    Value::Object(o)
                })
                .collect();
            let mut o = Object::new();
            o.push_unique("id", Value::str(c.id.as_str()));
            o.push_unique("name", Value::str(c.name.as_str()));
            o.push_unique("kind", Value::str(c.kind.as_str()));
            o.push_unique("sections", Value::Array(sections));
            Value::Object(o)
        })
        .collect();
    let mut top = Object::new();
    top.push_unique("image", Value::str(CONTRACT_SET_IMAGE));
    top.push_unique("contracts", Value::Array(images));
    Value::Object(top)
}

/// Canonical JSON bytes of the image.
fn image_bytes(contracts: &[Contract]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096);
    // The image holds only strings, arrays and objects; canonical JSON fails only on
    // non-finite numbers, so this cannot fail.
    if write_canonical(&image(contracts), &mut out).is_err() {
        unreachable!("the contract-set image holds no numbers");
    }
    out
}

/// The canonical JSON text of the image (contracts in the order given, which callers keep in
/// id order).
#[cfg(test)]
pub(super) fn contract_set_image(contracts: &[Contract]) -> String {
    String::from_utf8_lossy(&image_bytes(contracts)).into_owned()
}

/// `sha256:` + hex over the canonical image.
pub(super) fn contract_set_fingerprint(contracts: &[Contract]) -> String {
    address(&image_bytes(contracts))
}

#[cfg(test)]
mod tests {
    use crate::contract::{ContractSet, parse_contract};

    /// The `price-watch` contract of RUNTIME.md §2.6.
    const PRICE_WATCH: &str = "---
name: price-watch
kind: responsibility
---

# Price watch

### Goal
Keep a current list price for every tracked vendor.

### Maintains
The current list price of each tracked vendor. Each entry carries a stable
`vendor` key. `checked_at` and the page `source` are immaterial.
Postcondition: every entry has a positive price.
Postcondition: every price was read from the vendor's own pricing page.

#### prices
The set of vendor prices (unordered), material to the cent.

### Continuity
- self-driven: re-check once a day.
";

    #[test]
    fn price_watch_test_vector() {
        let c = parse_contract(PRICE_WATCH.as_bytes(), "price-watch.prose.md").unwrap();
        let text = c.fingerprint_text();
        // Eight labelled lines (Maintains is multi-line, so the text has more lines).
        let labels: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once(':').map(|(k, _)| k))
            .filter(|k| {
                [
                    "id",
                    "name",
                    "kind",
                    "requires",
                    "maintains",
                    "continuity",
                    "execution",
                    "criteria",
                ]
                .contains(k)
            })
            .collect();
        assert_eq!(
            labels,
            [
                "id",
                "name",
                "kind",
                "requires",
                "maintains",
                "continuity",
                "execution",
                "criteria"
            ]
        );
        assert!(text.ends_with("\nexecution:\ncriteria:"));
        assert!(text.starts_with("id:price-watch\nname:price-watch\nkind:responsibility\nrequires:\nmaintains:The current list price"));
        assert_eq!(
            c.fingerprint(),
            "sha256:85d0a39e5b48bc138c7d6834976da669064d7ad0bf57c9f9dbaa1660673f972f"
        );
    }

    #[test]
    fn set_image_shape() {
        let a = parse_contract(
            b"---\nname: b\nkind: test\n---\n### Goal\n\"q\"\n",
            "x.prose.md",
        )
        .unwrap();
        let b = parse_contract(b"pre\n### Requires\nr\n### Tools\nt\n", "a.prose.md").unwrap();
        let set = ContractSet::from_contracts(vec![a, b]).unwrap();
        assert_eq!(
            set.fingerprint_image(),
            r#"{"contracts":[{"id":"a","kind":"responsibility","name":"a","sections":[{"body":"r","heading":"Requires"},{"body":"t","heading":"Tools"}]},{"id":"b","kind":"test","name":"b","sections":[{"body":"\"q\"","heading":"Goal"}]}],"image":"reactor.contract-set/1"}"#
        );
        assert_eq!(
            set.fingerprint(),
            crate::format::address::address(set.fingerprint_image().as_bytes())
        );
    }
}
