; Bash definitions for the chunker (capture conventions: chunk/mod.rs).

(function_definition name: (word) @name) @definition.function

; Top-level variables: `readonly`/`declare -r` and UPPER_CASE names are
; constants.
((program (declaration_command (variable_assignment name: (variable_name) @name)) @definition.constant)
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))
((program (variable_assignment name: (variable_name) @name) @definition.constant)
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))

(comment) @comment
