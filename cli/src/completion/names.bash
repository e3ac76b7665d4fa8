
# jackin: the names of what exists (instances, workspaces, roles, agents, saved
# discards), from the home at the moment of completion, beside the flags
# above. `jackin __complete-names` decides what the word names.
_jackin_with_names() {
    _jackin "$@"
    local cur="${COMP_WORDS[COMP_CWORD]}"
    [[ "$cur" == -* ]] && return 0
    local names
    names=$("${COMP_WORDS[0]}" __complete-names -- "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null) || return 0
    [[ -z "$names" ]] && return 0
    # The value of a flag that takes a name (`launch -w`): the names
    # alone, not the files clap offers for any value.
    [[ "${COMP_WORDS[COMP_CWORD-1]}" == -* ]] && COMPREPLY=()
    COMPREPLY+=( $(compgen -W "$names" -- "$cur") )
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _jackin_with_names -o nosort -o bashdefault -o default jackin
else
    complete -F _jackin_with_names -o bashdefault -o default jackin
fi
