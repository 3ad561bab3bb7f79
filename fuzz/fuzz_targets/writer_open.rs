//! The writer's open of a real `receipts.json` (FORMATS.md §11.3–§11.4): create, torn-tail
//! repair, normalization, or refusal.
//!
//! Properties: a refused file is left byte-identical and the refusal is a content error; the
//! writer's dry check (`check_for_write`) refuses exactly what open refuses; an opened file is
//! in committed form, verifies, holds as many receipts as the handle counts, opens again
//! without any note and without a byte changing, and takes an append that a third open sees.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reactor::store::ledger::{
    Ledger, check_for_write, is_committed_form, read_ledger, verify_for_write,
};
use reactor_fuzz::{receipt, temp_dir};

fuzz_target!(|bytes: &[u8]| {
    let dir = temp_dir();
    let path = dir.path().join("receipts.json");
    std::fs::write(&path, bytes).unwrap();
    let checked = check_for_write(dir.path());
    match Ledger::open(dir.path()) {
        Err(e) => {
            assert!(e.is_content_error(), "{e}");
            assert!(
                checked.is_err(),
                "the dry check accepts what open refuses: {e}"
            );
            assert_eq!(
                std::fs::read(&path).unwrap(),
                bytes,
                "a refused file was changed"
            );
        }
        Ok((ledger, _notes)) => {
            assert!(checked.is_ok(), "open accepts what the dry check refuses");
            let count = ledger.len();
            drop(ledger);
            let now = std::fs::read(&path).unwrap();
            let read = read_ledger(&now).expect("an opened ledger reads");
            assert!(is_committed_form(&now, &read));
            assert_eq!(read.receipts.len(), count);
            assert!(verify_for_write(&read.receipts).is_ok());

            let (mut again, notes) = Ledger::open(dir.path()).expect("an opened ledger opens");
            assert!(notes.is_empty(), "a second open had to act: {notes:?}");
            assert_eq!(std::fs::read(&path).unwrap(), now);
            let stamped = again.append(receipt("fuzz-extra", "t")).expect("append");
            drop(again);
            let (third, notes) = Ledger::open(dir.path()).expect("an appended ledger opens");
            assert!(notes.is_empty(), "{notes:?}");
            assert_eq!(third.len(), count + 1);
            assert_eq!(
                third.last("fuzz-extra").map(|r| r.content_hash.as_str()),
                Some(stamped.content_hash.as_str())
            );
        }
    }
});
