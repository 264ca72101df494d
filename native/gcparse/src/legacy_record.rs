//! Legacy records: bracket balancing over lines (`_continue`), abandoning truncated ones,
//! and parsing a complete record (`_parse_record`).

use crate::out::Out;
use crate::core::{Owner, DEFERRED, EVENT, UNKNOWN};
use crate::event::Event;
use crate::legacy::{gen_collector, kb, stamp, Legacy, RecLine, Record};
use crate::legacy_res::{head_match, heap_total_sub, heap_totals, last_secs, occupancy, record_start, res, top_start};
use crate::pyfns::{lstrip, num, rstrip, slug, strip, Kb, PyInt};

enum Parsed {
    None,
    Started,
    Event(Event),
}

const YOUNG_GENS: [&str; 6] = ["DefNew", "ParNew", "PSYoungGen", "ASParNew", "ASPSYoungGen", "YG"];
const OLD_GENS: [&str; 5] = ["Tenured", "CMS", "PSOldGen", "ParOldGen", "ASCMS"];
const PERM_GENS: [&str; 5] = ["Perm", "PSPermGen", "CMS Perm", "Metaspace", "Class"];
const G1_TYPES: [&str; 6] = ["young", "mixed", "partial", "initial-mark", "to-space exhausted", "to-space overflow"];

impl Legacy {
    /// `_continue`: add a line to the open record; parse it when its brackets balance.
    pub fn cont(&mut self, o: &mut Owner, s: String, line_no: u64, out: &mut Out, extracted: bool) -> u8 {
        let r = res();
        let mut s = s;
        if !extracted {
            // a new top-level record while one is open: the open one was truncated -- except
            // the young collection that CMS runs inside its remark (CMSScavengeBeforeRemark)
            let rec = self.rec.as_ref().unwrap();
            let first = rec.pieces.first().map_or("", |p| p.as_str());
            let head80: String = s.chars().take(80).collect();
            let scavenge = (first.contains("YG occupancy") || first.contains("CMS Final Remark"))
                && !head80.contains("Full GC")
                && rec.pieces.iter().map(|p| p.matches("[GC").count()).sum::<usize>() < 2;
            if top_start(&s) && !scavenge {
                let rec = self.rec.take().unwrap();
                self.abandon(o, rec);
                return self.handle(o, &s, line_no, out);
            }
            let ls = lstrip(&s);
            let lead = ls.starts_with(',') || ls.starts_with(':') || ls.starts_with('[');
            if (!lead && r.legacy_info.is_match(&s)) || r.class_histo.is_match(&s) {
                self.rec.as_mut().unwrap().lines.push((line_no, RecLine::Ignored));
                return DEFERRED;
            }
            s = self.extract(o, &s, line_no, out, true).0;
        }
        let rec = self.rec.as_mut().unwrap();
        rec.lines.push((line_no, RecLine::Text(s.clone())));
        // find where the outermost record closes
        let mut depth = rec.depth;
        let mut close = None;
        for (i, b) in s.bytes().enumerate() {
            if b == b'[' {
                depth += 1;
            } else if b == b']' {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
        }
        let Some(mut close) = close else {
            rec.pieces.push(s);
            rec.depth = depth;
            if rec.lines.len() > 400 {
                // runaway record: give up
                let rec = self.rec.take().unwrap();
                self.abandon(o, rec);
            }
            return DEFERRED;
        };
        // the record closes on this line; a trailing [Times: ...] belongs to it
        let mut rest = &s[close + 1..];
        if rest.contains("[Times") {
            if let Some(tm) = r.trailing_times.find(rest) {
                close += tm.end();
                rest = &rest[tm.end()..];
            }
        }
        rec.pieces.push(s[..close + 1].to_string());
        let rec = self.rec.take().unwrap();
        let text: String = rec.pieces.concat();
        let mut parsed = Parsed::None;
        if rec.pieces.len() > 1 && text.ends_with(']') {
            // a young collection split over lines reads like a one-line one once joined
            if let Some(fm) = crate::legacy_fast::scan_young(&text) {
                if let Some(row) = self.fast_young(o, &fm, &rec.raw, rec.first_line, false) {
                    parsed = Parsed::Event(row.into_event());
                }
            }
        }
        if matches!(parsed, Parsed::None) {
            parsed = self.parse_record(o, &text, &rec);
        }
        let st = &mut o.stats;
        let n = rec.lines.len() - 1;
        let code = if matches!(parsed, Parsed::None) {
            for (ln, txt) in &rec.lines[..n] {
                match txt {
                    RecLine::Ignored => st.lines_ignored += 1,
                    RecLine::Text(t) => st.add_unknown(*ln, t),
                    RecLine::NotCounted => {}
                }
            }
            UNKNOWN
        } else {
            for (_, txt) in &rec.lines[..n] {
                match txt {
                    RecLine::Ignored => st.lines_ignored += 1,
                    RecLine::Text(_) => st.lines_event += 1,
                    RecLine::NotCounted => {}
                }
            }
            if let Parsed::Event(ev) = parsed {
                self.flush(out);
                self.last = Some(ev);
            }
            EVENT
        };
        let rest = strip(rest);
        if !rest.is_empty() && record_start(rest).is_some() {
            // another record starts on the same line (rare); it must not count the line again
            let rest = rest.to_string();
            self.handle(o, &rest, line_no, out);
            if let Some(rec) = &mut self.rec {
                if rec.lines.first().map_or(false, |l| l.0 == line_no) {
                    rec.lines[0] = (line_no, RecLine::NotCounted);
                }
            }
        }
        code
    }

    pub fn abandon(&mut self, o: &mut Owner, rec: Record) {
        let st = &mut o.stats;
        for (ln, txt) in &rec.lines {
            match txt {
                RecLine::Ignored => st.lines_ignored += 1,
                RecLine::Text(t) => st.add_unknown(*ln, t),
                RecLine::NotCounted => {}
            }
        }
        st.incomplete_events += 1;
    }

    // -- record parser -----------------------------------------------------------------------

    fn parse_record(&mut self, o: &mut Owner, text: &str, rec: &Record) -> Parsed {
        let r = res();
        let pm = r.prefix.captures(text).unwrap();
        let date = pm.name("date").map(|m| m.as_str());
        let up = pm.name("up").map(|m| m.as_str());
        let gcid = pm.name("gcid").map(|m| m.as_str());
        let mut body: String = text[pm.get(0).unwrap().end()..].to_string();
        let mut times = None;
        if body.contains("[Times:") {
            if let Some(t) = r.times.captures_iter(&body).last() {
                times = Some((t[1].to_string(), t[2].to_string(), t[3].to_string()));
                body = r.times.replace_all(&body, "").into_owned();
            }
        }
        let body = strip(&body);
        if !(body.starts_with('[') && body.ends_with(']')) || body.len() < 2 {
            return Parsed::None;
        }
        let mut inner = body[1..body.len() - 1].to_string();
        let mut subs: Vec<String> = Vec::new();
        loop {
            let found: Vec<String> = r.inner.captures_iter(&inner).map(|c| c[1].to_string()).collect();
            if found.is_empty() {
                break;
            }
            subs.extend(found);
            inner = r.inner.replace_all(&inner, " ").into_owned();
        }
        let top = inner;
        if top.contains('[') || top.contains(']') {
            return Parsed::None;
        }
        let Some((head, head_end)) = head_match(&top) else { return Parsed::None };
        if head == "Class Histogram" {
            return Parsed::Started; // -XX:+PrintClassHistogram report: understood, no event
        }
        if rstrip(&top).ends_with(", start") {
            // JDK 8 Shenandoah '[Pause Init Mark, start]': the record that ends it is the event
            let t = strip(&top);
            let key: String = t.chars().take(t.chars().count().saturating_sub(7)).collect();
            self.conc_starts.insert(key, (date.map(Into::into), up.map(Into::into), rec.first_line));
            return Parsed::Started;
        }
        let head = head.to_string();
        let after_head = &top[head_end..];
        let quals: Vec<String> = if after_head.is_empty() {
            Vec::new()
        } else {
            let part = after_head.split("->").next().unwrap();
            r.paren.captures_iter(part).map(|c| c[1].to_string()).collect()
        };
        let mut flags: Vec<&'static str> = Vec::new();
        let mut cause: Option<String> = None;
        let mut g1_kinds: Vec<String> = Vec::new();
        for q in &quals {
            let ql = strip(q);
            if G1_TYPES.contains(&ql) {
                g1_kinds.push(ql.to_string());
            } else if ql.ends_with(['K', 'M', 'G', 'B']) {
                continue; // a committed size '(16M)'
            } else if cause.is_none() && !ql.is_empty() {
                cause = Some(ql.to_string());
            }
        }
        // pause: the record's own ', N secs' (outside the nested records)
        let pause = last_secs(&top).map(|(v, u)| if u == "ms" { num(&v) } else { num(&v) * 1000.0 });
        let heaps = heap_totals(&top);
        let mut ev = Event::new("young", "unknown".into(), rec.first_line);
        ev.pause_ms = pause;
        ev.duration_ms = pause;
        ev.cause = cause.as_deref().map(Into::into);
        if let Some(h) = heaps.last() {
            ev.heap = [Some(kb(&h["b"])), Some(kb(&h["a"])), Some(kb(&h["c"]))];
        }
        let mut hint: Option<&'static str> = None;
        let mut old_collected = false;
        let mut young_sub = false;
        for sub in &subs {
            let owned;
            let mut sub: &str = sub;
            if sub.matches(':').count() > 1 && !sub.starts_with(' ') {
                owned = r.ts_in_sub.replace_all(sub, "").into_owned();
                sub = &owned;
            }
            if let Some(sm) = r.sub.captures(sub) {
                let name = strip(&sm["name"]);
                let q = sm.name("q").map_or("", |m| m.as_str());
                let vals = [Some(kb(&sm["b"])), Some(kb(&sm["a"])), Some(kb(&sm["c"]))];
                if YOUNG_GENS.contains(&name) {
                    young_sub = true;
                    ev.young = vals;
                    hint = hint.or(gen_collector(name));
                    if q.contains("promotion failed") {
                        flags.push("promotion-failed");
                    }
                } else if OLD_GENS.contains(&name) {
                    ev.old = vals;
                    if name == "CMS" || name == "ASCMS" {
                        hint = Some("cms");
                    } else if hint.is_none() {
                        hint = gen_collector(name);
                    }
                    if sm.name("t").map_or(false, |m| !m.as_str().is_empty()) {
                        old_collected = true;
                    }
                    if q.contains("concurrent mode failure") {
                        flags.push("concurrent-mode-failure");
                    }
                    if q.contains("concurrent mode interrupted") {
                        flags.push("concurrent-mode-interrupted");
                    }
                } else if PERM_GENS.contains(&name) || name.ends_with("Perm") {
                    ev.meta = vals;
                }
                continue;
            }
            if let Some(cm) = r.cms_phase.captures(sub) {
                hint = Some("cms");
                ev.event_type = cm["k"].into();
                let u = kb(&cm["u"]);
                ev.old = [Some(u.clone()), Some(u), Some(kb(&cm["c"]))];
                continue;
            }
            if let Some(ym) = r.yg.captures(sub) {
                let u = Kb::from_int(&PyInt::parse(&ym["u"]).unwrap());
                ev.young = [Some(u.clone()), Some(u), Some(Kb::from_int(&PyInt::parse(&ym["c"]).unwrap()))];
            }
        }
        for (needle, flag) in [
            ("concurrent mode failure", "concurrent-mode-failure"),
            ("concurrent mode interrupted", "concurrent-mode-interrupted"),
            ("promotion failed", "promotion-failed"),
        ] {
            if text.contains(needle) && !flags.contains(&flag) {
                flags.push(flag);
            }
        }
        self.record_type(&mut ev, &head, &top, &g1_kinds, &mut flags, &mut hint, heaps.is_empty(), subs.is_empty(), old_collected, young_sub);
        if let Some(c) = &cause {
            if c == "System.gc()" || c == "System" {
                flags.push("system-gc");
            }
            if c.contains("Humongous") {
                flags.push("humongous");
            }
            if c.starts_with("G1 ") {
                hint = hint.or(Some("g1"));
            }
            if c == "CMS Initial Mark" {
                ev.event_type = "initial-mark".into();
            } else if c == "CMS Final Remark" && &*ev.event_type != "young" {
                ev.event_type = "remark".into();
            }
        }
        if hint.is_none() && matches!(&*ev.event_type, "young" | "full") && self.saw_g1 && subs.is_empty() {
            hint = Some("g1");
        }
        ev.collector = o.set_collector_legacy(hint);
        if &*ev.collector == "unknown" {
            if let Some(h) = hint {
                ev.collector = h.into();
            }
        }
        ev.set_flags(&flags);
        if let Some(g) = gcid {
            ev.gc_id = PyInt::parse(g);
        }
        stamp(&mut ev, date, up);
        if let Some((u, s, rl)) = &times {
            ev.user_s = Some(num(u));
            ev.sys_s = Some(num(s));
            ev.real_s = Some(num(rl));
        }
        ev.phase = Some(head.as_str().into());
        if hint == Some("shenandoah") {
            let mut key = strip(&top);
            if let Some(i) = key.rfind(',') {
                key = &key[..i];
            }
            let key = strip(&heap_total_sub(key)).to_string();
            let start = self.conc_starts.remove(&key);
            ev.phase = Some(key.as_str().into());
            if let Some((_, _, line)) = start {
                ev.source_line = line;
            }
        }
        if o.keep_raw {
            ev.raw = Some(rec.raw.trim_end_matches(['\r', '\n']).into());
        }
        Parsed::Event(ev)
    }

    /// The event type of a record from its head, G1 kinds, generations and occupancy.
    #[allow(clippy::too_many_arguments)]
    fn record_type(
        &mut self, ev: &mut Event, head: &str, top: &str, g1_kinds: &[String], flags: &mut Vec<&'static str>,
        hint: &mut Option<&'static str>, no_heaps: bool, no_subs: bool, old_collected: bool, young_sub: bool,
    ) {
        let has = |k: &str| g1_kinds.iter().any(|g| g == k);
        match &*ev.event_type {
            "initial-mark" => self.cms_next_remark = true,
            "remark" => self.cms_next_remark = false,
            _ => {}
        }
        if head == "Full GC" {
            ev.event_type = "full".into();
            self.cms_next_remark = false;
        } else if head == "GC--" {
            ev.event_type = "young".into();
            flags.push("promotion-failed");
        } else if head == "GC pause" {
            *hint = Some("g1");
            ev.event_type = if has("mixed") || has("partial") { "mixed" } else { "young" }.into();
            if has("initial-mark") {
                flags.push("concurrent-start");
            }
            if has("to-space exhausted") || has("to-space overflow") {
                flags.push("to-space-exhausted");
            }
        } else if head == "GC remark" {
            ev.event_type = "remark".into();
            *hint = hint.or(Some("g1"));
        } else if head == "GC cleanup" {
            ev.event_type = "cleanup".into();
            *hint = Some("g1");
        } else if head.starts_with("Pause ") || head.starts_with("Concurrent ") {
            // JDK 8 Shenandoah: '[Pause Init Mark, 1.234 ms]', '[Concurrent marking ..., 12 ms]'
            *hint = Some("shenandoah");
            let name = strip(head.split_once(' ').unwrap().1);
            if head.starts_with("Pause ") {
                ev.event_type = if name.starts_with("Full") {
                    "full".into()
                } else if name.starts_with("Degenerated") {
                    "degenerated".into()
                } else {
                    format!("pause-{}", slug(name)).into()
                };
            } else {
                ev.event_type = format!("concurrent-{}", slug(name)).into();
                ev.concurrent_ms = ev.pause_ms.take();
            }
        } else if matches!(&*ev.event_type, "initial-mark" | "remark") {
        } else if head == "GC" && no_heaps && no_subs && occupancy(top).is_some() {
            // CMS without PrintGCDetails: '[GC 46468K(83008K), 0.0039333 secs]' (occupancy
            // only) are its initial mark and remark pauses, alternating
            *hint = Some("cms");
            ev.event_type = if self.cms_next_remark { "remark" } else { "initial-mark" }.into();
            self.cms_next_remark = &*ev.event_type == "initial-mark";
            let m = occupancy(top).unwrap();
            let u = kb(&m[1]);
            ev.heap = [Some(u.clone()), Some(u), Some(kb(&m[2]))];
        } else if old_collected || flags.contains(&"concurrent-mode-failure") {
            ev.event_type = "full".into(); // a young collection that fell back to a full one
        } else {
            ev.event_type = "young".into();
        }
        if &*ev.event_type == "remark" && young_sub {
            flags.push("scavenge-before-remark"); // CMSScavengeBeforeRemark
        }
        if matches!(&*ev.event_type, "initial-mark" | "remark") && no_heaps {
            if let Some(m) = occupancy(top) {
                let u = kb(&m[1]);
                ev.heap = [Some(u.clone()), Some(u), Some(kb(&m[2]))];
            }
        }
    }
}
