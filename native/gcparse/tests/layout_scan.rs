//! The hand-written decorator scanner (Layout::read) against the layout's regex, on decorator
//! lines of every kind and proptest mutations of them (non-ASCII insertions included: Unicode
//! digits, spaces and letters, where the regex's classes are wider than the scan's).
use brokerscope_gcparse::layout::detect_layout;
use proptest::prelude::*;

const LINES: &[&str] = &[
    "[2023-01-02T03:04:05.678+0100][12.345s][info][gc,start] GC(1) Pause Young\n",
    "[2023-01-02T03:04:05.678+01:00][0.010s][1672625045678ms][123ms][55ns][99][info ][gc,heap   ] x\n",
    "[2023-01-02T03:04:05,678Z][12,345s][warning][gc] y",
    "[12.345s][info][gc,phases,start] GC(2)\n",
    "[1672625045678ms][123ms][debug][safepoint] Safepoint\n",
    "[2023-01-02T03:04:05.678+0100][host][1234][5678][info][gc] z\n",
];

/// (matched, group spans) by the regex and by Layout::read, for `line` under the layout of `base`
fn both(base: &str, line: &str) -> Option<(Vec<Option<(usize, usize)>>, Vec<Option<(usize, usize)>>)> {
    let layout = detect_layout(base)?;
    let mut cl = layout.regex.capture_locations();
    let want = layout.regex.captures_read(&mut cl, line).map(|_| (0..cl.len()).map(|i| cl.get(i)).collect());
    let mut locs = layout.locations();
    let got = layout.read(&mut locs, line).then(|| (0..cl.len()).map(|i| locs.get(i)).collect());
    Some((want.unwrap_or_default(), got.unwrap_or_default()))
}

#[test]
fn samples_agree() {
    for b in LINES {
        for l in LINES {
            if let Some((want, got)) = both(b, l) {
                assert_eq!(got, want, "layout of {b:?} on {l:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]
    #[test]
    fn mutations_agree(i in 0..LINES.len(), j in 0..LINES.len(), at in 0usize..90, cut in 0usize..4,
                       ins in "[0-9 .,:+\\-TZsmn\\[\\]a-z_\t\x0b\x1c\u{a0}\u{3000}\u{663}\u{e9}\u{2028}]{0,4}") {
        let l: Vec<char> = LINES[j].chars().collect();
        let at = at % (l.len() + 1);
        let end = (at + cut).min(l.len());
        let line: String = l[..at].iter().copied().chain(ins.chars()).chain(l[end..].iter().copied()).collect();
        if let Some((want, got)) = both(LINES[i], &line) {
            prop_assert_eq!(got, want, "line {:?}", line);
        }
    }
}
