//! Parameters from arbitrary bytes: an error or a value, never a panic or an allocation beyond
//! the bytes given; a value read back from its own encoding is the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use preemptible_groth16::groth16::Parameters;

fuzz_target!(|data: &[u8]| {
    let Some((&flag, bytes)) = data.split_first() else {
        return;
    };
    let checked = flag & 1 == 1;
    if let Ok(params) = Parameters::read(bytes, checked) {
        let mut encoded = Vec::new();
        params.write(&mut encoded).expect("writing to a Vec");
        let again = Parameters::read(&encoded[..], checked).expect("our own encoding reads back");
        assert!(again == params, "a round trip changed the parameters");
    }
});
