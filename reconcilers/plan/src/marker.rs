//! How a session ended, as the entry wrapper recorded it: the completion
//! marker (`state/exit.json`) and the places inside the container that the
//! wrapper and the idle-hook runner are mounted at.
//!
//! Every container runs its agent under an entry wrapper (`entry.sh`,
//! bind-mounted from the unit) that writes the marker when the agent exits.
//! The marker survives `docker run --rm`, `docker rm` and the absence of any
//! jackin process, and carries the times; the engine's exit state (SIGKILL,
//! OOM) is the fallback; with neither, the outcome is unknown and says so.
//! The agent can write the file, so [`parse`] takes any bytes and never
//! trusts a word it does not know. Reading the file is `jackin_act::session`'s.
//!
//! The wrapper notes a stop signal it receives (jackin's `Kept` teardown,
//! `docker stop` and an engine shutdown reach it through the init, which
//! signals the whole process group) and then writes `signal:TERM` (or
//! `signal:HUP`) whatever the agent's exit code: many agents trap SIGTERM and
//! exit 0. Only a marker that says `exited` is the agent ending its session
//! (what follows is [`crate::ending`]'s).

use jiff::Timestamp;
use serde::Deserialize;

/// Where the wrapper's directory (the wrapper and the start plan) is
/// mounted in the container, read-only.
pub const BIN_DIR: &str = "/jackin/bin";
/// Where the wrapper is in the container.
pub const ENTRY_PATH: &str = "/jackin/bin/entry";
/// Where the idle-hook runner is in the container.
pub const HOOK_PATH: &str = "/jackin/bin/hook";

/// A completion marker, as the wrapper writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Marker {
    pub exit_code: i64,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub finished_at: String,
    /// `exited`, or `signal:TERM` (`HUP`) when a stop from outside ended it.
    /// Written by a file the agent can change: read through [`Marker::reason`].
    pub reason: String,
    /// When the file was written.
    #[serde(skip)]
    pub written: Option<Timestamp>,
}

impl Marker {
    /// Whether the agent ended on its own, rather than being stopped.
    pub fn ended_by_itself(&self) -> bool {
        self.reason == "exited"
    }

    /// Who ended the session, as one of the words the wrapper writes; any
    /// other text (the agent can write the file) is `unrecognized`.
    pub fn reason(&self) -> &'static str {
        match self.reason.as_str() {
            "exited" => "exited",
            "signal:TERM" => "signal:TERM",
            "signal:HUP" => "signal:HUP",
            _ => "unrecognized",
        }
    }

    /// When the session ended: when the marker was written (to the
    /// nanosecond, so two quick sessions never look like one), else the
    /// wrapper's own whole-second time.
    pub fn finished(&self) -> Option<Timestamp> {
        self.written.or_else(|| self.finished_at.parse().ok())
    }
}

/// What the unit's marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerState {
    Absent,
    Present(Marker),
    /// There, but not a marker: the engine's code is used instead.
    Malformed(String),
}

/// Reads a marker's bytes, as found in the unit, with the time the file was
/// written (`None` when unknown). Anything but a marker is
/// [`MarkerState::Malformed`], with the parser's reason prefixed by `source`.
pub fn parse(bytes: &[u8], written: Option<Timestamp>, source: &str) -> MarkerState {
    match serde_json::from_slice::<Marker>(bytes) {
        Ok(mut marker) => {
            marker.written = written;
            MarkerState::Present(marker)
        }
        Err(e) => MarkerState::Malformed(format!("{source}: {e}")),
    }
}

/// Properties of [`parse`], on markers the wrapper writes and on bytes the
/// agent may have put in their place.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// The words the wrapper writes as `reason` (`entry.sh`: `exited`, or
    /// `signal:` and the trap's name).
    const REASONS: [&str; 3] = ["exited", "signal:TERM", "signal:HUP"];

    /// The marker as `entry.sh` prints it, `printf` format and all. The
    /// names are the instance's and its container's (DNS labels), so
    /// the wrapper's unescaped `%s` stays valid JSON.
    fn wrapper_marker(names: (&str, &str), code: u8, times: (&str, &str), reason: &str) -> String {
        let (instance, container) = names;
        let (started, finished) = times;
        format!(
            "{{\"instance\":\"{instance}\",\"container\":\"{container}\",\"exitCode\":{code},\
             \"startedAt\":\"{started}\",\"finishedAt\":\"{finished}\",\"reason\":\"{reason}\"}}\n"
        )
    }

    /// What the wrapper's `now` prints: `date -u +%Y-%m-%dT%H:%M:%SZ`, or
    /// nothing where `date` failed.
    fn wrapper_time() -> impl Strategy<Value = String> {
        prop_oneof![
            1 => Just(String::new()),
            4 => (0i64..4_102_444_800).prop_map(|second| {
                Timestamp::from_second(second)
                    .unwrap()
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
                    .to_string()
            }),
        ]
    }

    fn written() -> impl Strategy<Value = Option<Timestamp>> {
        proptest::option::of(
            (0i64..4_102_444_800, 0i32..1_000_000_000)
                .prop_map(|(second, nanos)| Timestamp::new(second, nanos).unwrap()),
        )
    }

    /// Text an agent might write as the reason: near misses of the
    /// wrapper's words, and anything at all (JSON escapes decode to
    /// control characters, quotes, lone surrogates' replacements).
    fn reason() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(REASONS.to_vec()).prop_map(str::to_owned),
            proptest::sample::select(vec![
                "Exited",
                "exited ",
                " exited",
                "exited\n",
                "signal:KILL",
                "signal:",
                "signal",
                "signal:term",
                "signal:TERM\u{0}",
                "",
            ])
            .prop_map(str::to_owned),
            any::<String>(),
        ]
    }

    proptest! {
        // A failing case is not saved to a file beside the source: the
        // shrunk input it prints is made a named example test instead,
        // which says why it matters (and CI's clean clone would lose the
        // file anyway).
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

        /// A marker as the wrapper writes it reads back as what it says.
        #[test]
        fn a_marker_the_wrapper_writes_reads_back(
            instance in "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?",
            container in "jackin-[a-z0-9-]{1,40}[a-z0-9]",
            code in any::<u8>(),
            started in wrapper_time(),
            finished in wrapper_time(),
            reason in proptest::sample::select(REASONS.to_vec()),
            written in written(),
        ) {
            let text = wrapper_marker((&instance, &container), code, (&started, &finished), reason);
            let MarkerState::Present(marker) = parse(text.as_bytes(), written, "exit.json") else {
                panic!("not read: {text}");
            };
            prop_assert_eq!(marker.exit_code, i64::from(code));
            prop_assert_eq!(&marker.started_at, &started);
            prop_assert_eq!(&marker.finished_at, &finished);
            prop_assert_eq!(marker.reason(), reason);
            prop_assert_eq!(marker.ended_by_itself(), reason == "exited");
            let wrapper_second = (!finished.is_empty()).then(|| finished.parse::<Timestamp>().unwrap());
            prop_assert_eq!(marker.finished(), written.or(wrapper_second));
        }

        /// A marker cut short (the agent can truncate the file) is never
        /// read as a marker with what was left.
        #[test]
        fn a_marker_cut_short_is_malformed(
            code in any::<u8>(),
            finished in wrapper_time(),
            reason in proptest::sample::select(REASONS.to_vec()),
            cut in any::<proptest::sample::Index>(),
        ) {
            let text = wrapper_marker(("i", "jackin-i"), code, ("", &finished), reason);
            // Without its line break the marker is whole; any shorter is not.
            let whole = parse(&text.as_bytes()[..text.len() - 1], None, "exit.json");
            prop_assert!(matches!(whole, MarkerState::Present(_)), "{:?}", whole);
            let kept = cut.index(text.len() - 1);
            let state = parse(&text.as_bytes()[..kept], None, "exit.json");
            prop_assert!(
                matches!(&state, MarkerState::Malformed(why) if why.starts_with("exit.json: ")),
                "{:?} read from {:?}", state, &text[..kept]
            );
        }

        /// Whatever the agent writes as the reason is read as written, and
        /// told as one of the wrapper's words only when it is one.
        #[test]
        fn a_reason_the_wrapper_does_not_write_is_unrecognized(
            reason in reason(),
            code in any::<i64>(),
            finished in any::<String>(),
            written in written(),
        ) {
            let text = serde_json::json!({
                "exitCode": code, "finishedAt": finished, "reason": reason, "extra": [1, {}],
            })
            .to_string();
            let MarkerState::Present(marker) = parse(text.as_bytes(), written, "exit.json") else {
                panic!("not read: {text}");
            };
            prop_assert_eq!(&marker.reason, &reason);
            let known = REASONS.contains(&reason.as_str());
            prop_assert_eq!(marker.reason(), if known { reason.as_str() } else { "unrecognized" });
            prop_assert_eq!(marker.ended_by_itself(), reason == "exited");
            if written.is_some() {
                prop_assert_eq!(marker.finished(), written);
            }
        }

        /// Any bytes at all are read without a panic, and anything but a
        /// marker says so under the file's name.
        #[test]
        fn any_bytes_are_read_without_a_panic(
            bytes in prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..4096),
                // Deep nesting: refused by the parser's depth limit, not by
                // a stack overflow.
                (1usize..100_000, proptest::sample::select(vec![b'[', b'{'])).prop_map(|(n, open)| vec![open; n]),
                "\\{\"exitCode\": ?-?[0-9]{1,25}(\\.[0-9])?, \"reason\": \"(\\\\u[0-9a-fA-F]{4}|[^\"\\\\])*\"\\}"
                    .prop_map(String::into_bytes),
            ],
        ) {
            match parse(&bytes, None, "exit.json") {
                MarkerState::Present(marker) => {
                    prop_assert!(serde_json::from_slice::<serde_json::Value>(&bytes).is_ok());
                    prop_assert!(marker.reason() == "unrecognized" || REASONS.contains(&marker.reason()));
                }
                MarkerState::Malformed(why) => prop_assert!(why.starts_with("exit.json: "), "{}", why),
                MarkerState::Absent => prop_assert!(false, "bytes read as no marker"),
            }
        }
    }
}
