
# jackin: the names of what exists (instances, workspaces, roles, agents, saved
# discards), from the home at the moment of completion, beside the flags
# above. `jackin __complete-names` decides what the word names.
function __fish_jackin_names
    set -l words (commandline -opc)
    $words[1] __complete-names -- $words[2..-1] 2>/dev/null
end
complete -c jackin -a '(__fish_jackin_names)'
# A flag that takes a value completes only its own values: the flags whose
# value is a name say so themselves.
complete -c jackin -n '__fish_seen_subcommand_from launch' -s w -l workspace -x -a '(__fish_jackin_names)'
complete -c jackin -n '__fish_seen_subcommand_from launch' -s a -l agent -x -a '(__fish_jackin_names)'
