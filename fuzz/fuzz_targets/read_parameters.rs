//! Parameters from arbitrary bytes: an error or a value, never a panic or an allocation beyond
//! the bytes given; a value's encoding is exactly the bytes it was read from (reading is
//! canonical; bytes after the last section are left unread and not compared).
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptible_groth16::groth16::Parameters;

fuzz_target!(|data: &[u8]| {
    let Some((&flag, bytes)) = data.split_first() else {
        return;
    };
    let checked = flag & 1 == 1;
    let mut rest = bytes;
    if let Ok(params) = Parameters::read(&mut rest, checked) {
        let consumed = &bytes[..bytes.len() - rest.len()];
        let mut encoded = Vec::new();
        params.write(&mut encoded).expect("writing to a Vec");
        assert!(encoded == consumed, "the parameters have another encoding");
    }
});
