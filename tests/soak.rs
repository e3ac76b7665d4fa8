//! A randomized soak against the real engine: agents that behave as real
//! ones do (trap SIGTERM and exit 0, end their session with 0 or 3, leave
//! unfinished work in an isolated checkout), the operator's commands,
//! docker's own hands (`kill`, `stop`, `rm -f`), and `kill -9` of jackin at
//! random moments. However it goes, it must end with no lost kept unit, no
//! lost evidence and no leaked object.
//!
//! Seeded: `JACKIN_SOAK_SEED` replays a run, `JACKIN_SOAK_OPS` sets its
//! length. The seed is printed, so a failure can be replayed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use support::{Home, RoleRepo, docker, ensure_busybox, instance_yaml_with};

/// xorshift64*: enough randomness for choosing steps, and replayable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// How an agent behaves.
#[derive(Debug, Clone, Copy)]
enum Agent {
    /// Traps SIGTERM and exits 0, as many real agents do.
    TrapsTerm,
    /// Ends its session with this code once the host writes `state/go`.
    Quits(u8),
}

impl Agent {
    fn script(self) -> String {
        let body = match self {
            Agent::TrapsTerm => "trap 'exit 0' TERM; while true; do sleep 1; done".to_owned(),
            Agent::Quits(code) => {
                format!("while [ ! -f /jackin/state/go ]; do sleep 0.2; done; exit {code}")
            }
        };
        // Every agent leaves a conversation in its home first.
        format!("echo kept > $HOME/conversation; {body}")
    }
}

/// What the soak knows of one instance it made.
struct Tracked {
    name: String,
    agent: Agent,
    /// A file of unfinished work in its isolated checkout, when it has one.
    evidence: Option<PathBuf>,
    /// `set-phase kept` succeeded and nothing has asked for another phase
    /// since: the unit must survive.
    kept: bool,
    /// The operator discarded it (`delete --force`): nothing is owed.
    discarded: bool,
}

struct Soak {
    home: Home,
    repo: RoleRepo,
    rng: Rng,
    instances: Vec<Tracked>,
    next_id: usize,
    log: Vec<String>,
}

impl Soak {
    /// Runs `jackin ARGS`; one time in three it is killed with SIGKILL after
    /// a random moment, as a crash or an impatient operator would. Returns
    /// the output when it ran to its end.
    fn jackin(&mut self, args: &[&str]) -> Option<Output> {
        // Most commands take a few hundred milliseconds: a kill within that
        // lands mid-way, at a random step.
        let kill_after = self
            .rng
            .chance(3)
            .then(|| Duration::from_millis(20 + self.rng.below(300)));
        let mut child = self
            .home
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(after) = kill_after {
            std::thread::sleep(after);
            if child.try_wait().unwrap().is_none() {
                let _ = child.kill();
                let _ = child.wait();
                self.log.push(format!("{args:?}: kill -9 after {after:?}"));
                return None;
            }
        }
        let out = child.wait_with_output().unwrap();
        self.log.push(format!("{args:?}: {}", out.status));
        Some(out)
    }

    fn launch(&mut self) {
        let name = format!("soak-{}", self.next_id);
        self.next_id += 1;
        let agent = match self.rng.below(3) {
            0 => Agent::TrapsTerm,
            1 => Agent::Quits(0),
            _ => Agent::Quits(3),
        };
        let isolated = self.rng.chance(2);
        let mut spec = format!(
            "  command: [sh, -c, {}]\n",
            serde_json::to_string(&agent.script()).unwrap()
        );
        if isolated {
            spec.push_str(&format!(
                "  mounts: [{{src: {}, dst: /w, isolation: clone}}]\n",
                self.repo.path().display()
            ));
        }
        let path = self
            .home
            .write_input(&format!("{name}.yaml"), &instance_yaml_with(&name, &spec));
        let done = self.jackin(&["apply", path.to_str().unwrap(), "--timeout", "60s"]);
        let mut tracked = Tracked {
            name: name.clone(),
            agent,
            evidence: None,
            kept: false,
            discarded: false,
        };
        // Unfinished work, once the checkout exists (the apply may have
        // been killed before it was made).
        if isolated && done.is_some_and(|o| o.status.success()) {
            let obj = self.home.object(&name);
            if let Some(checkout) = obj["status"]["mounts"][0]["path"].as_str() {
                let draft = Path::new(checkout).join("draft.md");
                std::fs::write(&draft, "unfinished").unwrap();
                tracked.evidence = Some(draft);
            }
        }
        self.instances.push(tracked);
    }

    fn container(&self, name: &str) -> Option<String> {
        let out = self.home.jackin(&["get", name, "-o", "json"]);
        let obj: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        obj["status"]["containerName"].as_str().map(str::to_owned)
    }

    fn step(&mut self) {
        if self.instances.is_empty() || self.rng.chance(6) {
            return self.launch();
        }
        let i = self.rng.below(self.instances.len() as u64) as usize;
        let name = self.instances[i].name.clone();
        match self.rng.below(8) {
            0 => {
                let out = self.jackin(&["set-phase", &name, "kept", "--timeout", "60s"]);
                if out.is_some_and(|o| o.status.success()) {
                    self.instances[i].kept = true;
                }
            }
            1 => {
                self.instances[i].kept = false;
                if let Some(container) = self.container(&name) {
                    let go = self
                        .home
                        .path()
                        .join("data")
                        .join(container)
                        .join("state/go");
                    let _ = std::fs::remove_file(go);
                }
                self.jackin(&["set-phase", &name, "running", "--timeout", "60s"]);
            }
            2 => {
                // Without --force and without a terminal: purged only when
                // nothing is unfinished.
                self.instances[i].kept = false;
                self.jackin(&["delete", &name, "--timeout", "60s"]);
            }
            3 => {
                if let Some(container) = self.container(&name) {
                    let hand = ["kill", "stop", "rm -f"][self.rng.below(3) as usize];
                    let mut args: Vec<&str> = hand.split(' ').collect();
                    args.push(&container);
                    let _ = Command::new("docker").args(&args).output();
                    self.log.push(format!("docker {hand} {name}"));
                }
            }
            4 => {
                // The agent ends its own session.
                if matches!(self.instances[i].agent, Agent::Quits(_))
                    && let Some(container) = self.container(&name)
                {
                    let state = self.home.path().join("data").join(container).join("state");
                    if state.exists() {
                        let _ = std::fs::write(state.join("go"), "");
                        self.log.push(format!("{name} ends its session"));
                    }
                }
            }
            5 if self.instances[i].evidence.is_none() => {
                self.instances[i].discarded = true;
                self.jackin(&["delete", &name, "--force", "--timeout", "60s"]);
            }
            _ => {
                self.jackin(&["controller", "--once"]);
            }
        }
    }

    /// What the soak promises, checked once every crash has been recovered
    /// from by an uninterrupted pass.
    fn check(&self) {
        let home = &self.home;
        let log = self.log.join("\n");
        for t in self.instances.iter().filter(|t| !t.discarded) {
            let exists = home.jackin(&["get", &t.name]).status.success();
            if let Some(evidence) = &t.evidence {
                assert!(
                    evidence.exists(),
                    "{}: unfinished work was lost ({})\n{log}",
                    t.name,
                    evidence.display()
                );
            }
            if t.kept {
                assert!(exists, "{}: a kept instance was lost\n{log}", t.name);
            }
            if exists && let Some(container) = self.container(&t.name) {
                let conversation = home
                    .path()
                    .join("data")
                    .join(container)
                    .join("home/conversation");
                let obj = home.object(&t.name);
                // A unit whose agent never started has no conversation yet.
                if obj["status"]["recipe"]["firstRunAt"].is_string() {
                    assert!(
                        conversation.exists(),
                        "{}: the agent's home lost its conversation\n{log}",
                        t.name
                    );
                }
            }
        }
    }

    /// Discards everything and checks that nothing of this home is left.
    fn clean_up_and_check_nothing_leaks(&self) {
        let home = &self.home;
        let listed = home.ok(&["get", "-o", "json"]);
        let list: serde_json::Value = serde_json::from_str(&listed).unwrap();
        for obj in list["items"].as_array().into_iter().flatten() {
            let name = obj["metadata"]["name"].as_str().unwrap();
            home.ok(&["delete", name, "--force", "--timeout", "60s"]);
        }
        home.ok(&["prune"]);
        let label = format!("label=jackin.dev/home={}", home.home_id());
        for kind in [
            &["ps", "-aq"][..],
            &["network", "ls", "-q"],
            &["volume", "ls", "-q"],
        ] {
            let mut args = kind.to_vec();
            args.extend(["--filter", &label]);
            assert_eq!(docker(&args), "", "leaked: docker {kind:?}");
        }
        let data = home.path().join("data");
        let left: Vec<String> = std::fs::read_dir(&data)
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    // The index, the bounded record of instances jackin
                    // ended itself and the run logs (kept by design, each
                    // bounded, see README).
                    .filter(|n| {
                        !n.starts_with("instances.json") && n != "ended.json" && n != "diagnostics"
                    })
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "left in data/: {left:?}");
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(data.join("instances.json")).unwrap()).unwrap();
        assert_eq!(index["instances"], serde_json::json!([]), "{index}");
    }
}

#[test]
fn a_random_mix_of_agents_operators_and_crashes_loses_and_leaks_nothing() {
    ensure_busybox();
    let seed = std::env::var("JACKIN_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let ops: usize = std::env::var("JACKIN_SOAK_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    println!("soak seed {seed} ({ops} steps): JACKIN_SOAK_SEED={seed} replays it");
    let mut soak = Soak {
        home: Home::new(),
        repo: RoleRepo::new("soak"),
        rng: Rng(seed),
        instances: Vec::new(),
        next_id: 0,
        log: Vec::new(),
    };
    for _ in 0..ops {
        soak.step();
    }
    let count = |what: &str| soak.log.iter().filter(|l| l.contains(what)).count();
    println!(
        "{} instances; {} kill -9 of jackin; {} docker kill|stop|rm -f; {} sessions ended by their agent",
        soak.instances.len(),
        count("kill -9"),
        count("docker "),
        count("ends its session"),
    );
    // Recovery: whatever a crash left half-done, an uninterrupted pass
    // finishes; a second one finds nothing more to do.
    for _ in 0..2 {
        soak.home.jackin(&["controller", "--once"]);
    }
    soak.check();
    soak.clean_up_and_check_nothing_leaks();
}
