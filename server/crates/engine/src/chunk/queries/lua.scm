; Lua definitions for the chunker (capture conventions: chunk/mod.rs).
; `function M.f()` is a written path; `function M:f()` a method of `M`.

(function_declaration name: (method_index_expression
  table: (identifier) @container method: (identifier) @name)) @definition.method
(function_declaration name: (dot_index_expression) @name.path) @definition.function
(function_declaration name: (identifier) @name) @definition.function

; Functions assigned to a name: `M.f = function() end`, `local f = function() end`.
(variable_declaration (assignment_statement (variable_list name: (identifier) @name)
  (expression_list value: (function_definition)))) @definition.function
(assignment_statement (variable_list name: (dot_index_expression) @name.path)
  (expression_list value: (function_definition))) @definition.function
(assignment_statement (variable_list name: (identifier) @name)
  (expression_list value: (function_definition))) @definition.function

; Module-level variables: UPPER_CASE names are constants.
((chunk (variable_declaration (assignment_statement (variable_list name: (identifier) @name))) @definition.constant)
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))
(chunk (variable_declaration (assignment_statement (variable_list name: (identifier) @name))) @definition.variable)

(comment) @comment
