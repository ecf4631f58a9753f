//! Fuzz target: `match[]` selectors of `/api/v1/export` must never panic;
//! a parsed selector has at least one matcher.
#![no_main]

use hourglass_ingest::selector::parse_selector;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(matchers) = parse_selector(text)
    {
        assert!(!matchers.is_empty());
    }
});
