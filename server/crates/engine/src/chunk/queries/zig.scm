; Zig definitions for the chunker (capture conventions: chunk/mod.rs).
; Types are constants bound to a container expression:
; `const Arena = struct { ... };`.

(variable_declaration (identifier) @name (struct_declaration)) @definition.struct
(variable_declaration (identifier) @name (enum_declaration)) @definition.enum
(variable_declaration (identifier) @name (union_declaration)) @definition.enum
(variable_declaration (identifier) @name (opaque_declaration)) @definition.struct
(function_declaration name: (identifier) @name) @definition.function
(test_declaration (string (string_content) @name)) @definition.function

; Top-level constants and variables with a literal or computed value
; (imports, `@import(...)`, are neither).
(source_file (variable_declaration (identifier) @name
  [(integer) (float) (string) (multiline_string) (call_expression) (field_expression)
   (binary_expression) (anonymous_struct_initializer) (identifier)]) @definition.constant)

(comment) @comment
