//! LineBounds is independent of the chunking: any split of the input gives the same bytes,
//! and the same blank-run verdict, as the whole input at once.
use brokerscope_gcparse::bounds::LineBounds;
use proptest::prelude::*;

fn bounded(data: &[u8], cuts: &[usize]) -> Option<Vec<u8>> {
    let mut b = LineBounds::new(5, 3);
    let mut out = Vec::new();
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    cuts.sort_unstable();
    for c in cuts.into_iter().chain([data.len()]) {
        out.extend_from_slice(&b.apply(&data[at..c]).ok()?);
        at = c;
    }
    Some(out)
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![Just(b'\n'), Just(b'\r'), Just(b' '), Just(b'\t'), Just(b'x'), Just(0xE2u8), Just(0x82u8)];
    proptest::collection::vec(byte, 0..80)
}

proptest! {
    #[test]
    fn any_chunking_same_result(data in input(), cuts in proptest::collection::vec(0usize..100, 0..6)) {
        prop_assert_eq!(bounded(&data, &cuts), bounded(&data, &[]));
    }
}
