//! Shell completion of the names jackin keeps, driven through each shell's
//! own completion entry point against a home holding instances, a
//! workspace and the built-in agents: bash's completion function as
//! `complete -p` names it, fish's `complete -C`, and zsh's function with
//! its builtins stood in for (zsh completes only inside its line editor).

use std::process::Command;

use support::{Home, instance_yaml};

const JACKIN: &str = env!("CARGO_BIN_EXE_jackin");

/// A home with instances `alpha-one` and `alpha-two` (role `tester`) and
/// workspace `fleet` (role `architect`), recorded without converging (no
/// engine is needed to list names).
fn home_with_names() -> Home {
    let home = Home::new();
    let workspace = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: fleet}\nspec:\n  \
         roles: [{name: architect, image: busybox}]\n";
    home.record(
        "names",
        &format!(
            "{}---\n{}---\n{workspace}",
            instance_yaml("alpha-one"),
            instance_yaml("alpha-two")
        ),
    );
    home
}

/// Runs `shell ARGS…` in `home`'s environment, insisting on success;
/// returns stdout.
fn shell(home: &Home, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .env("JACKIN_HOME", home.path())
        .env("JACKIN_CREDENTIALS_HOME", home.operator_home())
        .env("JACKIN", JACKIN)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Bash completes `jackin WORDS… CUR` as it does at a prompt: the script
/// sourced, the function `complete -p jackin` names called with the
/// words, `COMPREPLY` printed.
fn bash_completes(home: &Home, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <(\"$JACKIN\" completions bash)\n\
         function=$(complete -p jackin | sed -E 's/.*-F ([^ ]+).*/\\1/')\n\
         COMP_WORDS=(\"$JACKIN\" {words})\nCOMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}\n\
         \"$function\" \"${{COMP_WORDS[0]}}\" \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = quoted.join(" ")
    );
    lines(&shell(home, "bash", &["-c", &script]))
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_instance_workspace_and_agent_names() {
    let home = home_with_names();
    assert_eq!(
        bash_completes(&home, &["attach", "alpha"]),
        ["alpha-one", "alpha-two"]
    );
    let any = bash_completes(&home, &["describe", ""]);
    assert!(
        any.contains(&"alpha-one".to_owned()) && any.contains(&"alpha-two".to_owned()),
        "{any:?}"
    );
    assert_eq!(bash_completes(&home, &["launch", "-w", "f"]), ["fleet"]);
    assert_eq!(bash_completes(&home, &["launch", "-w", ""]), ["fleet"]);
    assert_eq!(
        bash_completes(&home, &["launch", "-w", "fleet", "--agent", "c"]),
        ["claude", "codex"]
    );
    assert_eq!(
        bash_completes(&home, &["describe", "workspace", ""])
            .iter()
            .filter(|w| !w.starts_with('-'))
            .collect::<Vec<_>>(),
        ["fleet"]
    );
    // Roles: the workspace's and the instances', once each.
    assert_eq!(
        bash_completes(&home, &["launch", "-w", "fleet", "-r", ""]),
        ["architect", "tester"]
    );
    assert_eq!(
        bash_completes(&home, &["launch", "--role", "t"]),
        ["tester"]
    );
    // Flags are still clap's.
    assert_eq!(bash_completes(&home, &["attach", "--no-w"]), ["--no-wait"]);
}

#[test]
fn fish_and_zsh_complete_the_same_names() {
    let home = home_with_names();
    if Command::new("fish").arg("--version").output().is_ok() {
        let fish = |line: &str| {
            let script = format!(
                "\"$JACKIN\" completions fish | source\nfunction jackin; \"$JACKIN\" $argv; end\n\
                 complete -C '{line}'"
            );
            lines(&shell(&home, "fish", &["-c", &script]))
        };
        assert!(
            fish("jackin attach alpha-").contains(&"alpha-one".to_owned()),
            "{:?}",
            fish("jackin attach alpha-")
        );
        assert_eq!(fish("jackin launch -w "), ["fleet"]);
    } else {
        eprintln!("fish is not installed: its completion is not driven here");
    }
    if Command::new("zsh").arg("--version").output().is_ok() {
        // compadd and the generated _jackin stood in for: what the names
        // part adds for `jackin attach al`.
        let script = "source <(\"$JACKIN\" completions zsh | sed '/^compdef\\|^    compdef/d')\n\
                      compadd() { [[ $1 == -a ]] && print -l -- ${(P)2} }\n\
                      _jackin() { : }\n\
                      words=(\"$JACKIN\" attach al); CURRENT=3; PREFIX=al\n\
                      _jackin_with_names\n";
        assert_eq!(
            lines(&shell(&home, "zsh", &["-c", script])),
            ["alpha-one", "alpha-two"]
        );
    } else {
        eprintln!("zsh is not installed: its completion is not driven here");
    }
}
