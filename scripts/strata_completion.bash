# bash completion for strata (installed as share/bash-completion/completions/strata).
# Commands and options come from the installed tool itself (`strata --help`, `strata CMD --help`),
# read once per shell, so the completion never disagrees with the version on PATH.

_strata_commands() {
  if [[ -z ${_strata_cached_commands-} ]]; then
    _strata_cached_commands=$("${1:-strata}" --help 2>/dev/null |
      awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
  fi
  printf '%s\n' "$_strata_cached_commands"
}

_strata_options() {  # $1: the tool, $2: the command (bench: "bench MODE")
  local key=${2// /_}
  local var="_strata_cached_opts_${key//-/_}"
  if [[ -z ${!var-} ]]; then
    # Option names as CLI11 prints them: "  -o,--output FILE   ..." -> -o --output
    printf -v "$var" '%s' "$($1 $2 --help 2>/dev/null |
      grep -oE '^  +-[-A-Za-z0-9,{}]+' | tr ',' '\n' | sed -e 's/^ *//' -e 's/{.*}//' | grep -E '^-')"
  fi
  printf '%s\n' "${!var}"
}

_strata() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local tool=${COMP_WORDS[0]}
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    mapfile -t COMPREPLY < <(compgen -W "$(_strata_commands "$tool") --help --version" -- "$cur")
    return 0
  fi
  local command=${COMP_WORDS[1]}
  if [[ $command == bench ]]; then
    if ((COMP_CWORD == 2)); then
      mapfile -t COMPREPLY < <(compgen -W "generate run --help" -- "$cur")
      return 0
    fi
    command="bench ${COMP_WORDS[2]}"
  fi
  # After `record ... --` (or the command's first word) the words are the traced program's.
  if [[ $command == record ]]; then
    local k
    for ((k = 2; k < COMP_CWORD; ++k)); do
      if [[ ${COMP_WORDS[k]} == -- ]]; then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        return 0
      fi
    done
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_strata_options "$tool" "$command")" -- "$cur")
    return 0
  fi
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  compopt -o filenames 2>/dev/null
  return 0
}

complete -F _strata strata
