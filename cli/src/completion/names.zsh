
# jackin: the names of what exists (instances, workspaces, roles, agents, saved
# discards), from the home at the moment of completion, beside the flags
# above. `jackin __complete-names` decides what the word names. Load this
# script with `source <(jackin completions zsh)` after `compinit`.
_jackin_with_names() {
    local -a jackin_names
    if [[ "$PREFIX" != -* ]]; then
        jackin_names=(${(f)"$(${words[1]} __complete-names -- ${words[2,CURRENT-1]} 2>/dev/null)"})
        (( ${#jackin_names} )) && compadd -a jackin_names
    fi
    _jackin "$@"
}

compdef _jackin_with_names jackin
