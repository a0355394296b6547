; Scala definitions for the chunker (capture conventions: chunk/mod.rs).
; `object` is a module (its defs become methods); a companion object and
; its class share a name.

(trait_definition name: (_) @name) @definition.trait
(class_definition name: (_) @name) @definition.class
(object_definition name: (_) @name) @definition.module
(enum_definition name: (_) @name) @definition.enum
(function_definition name: (_) @name) @definition.function
(function_declaration name: (_) @name) @definition.function
(given_definition name: (_) @name) @definition.variable
(type_definition name: (type_identifier) @name) @definition.type

; Vals of a file, an object or a package: UPPER_CASE or capitalised names
; are constants (Scala style), the rest variables.
((val_definition pattern: (identifier) @name) @definition.constant
  (#match? @name "^[A-Z]"))
(compilation_unit (val_definition pattern: (identifier) @name) @definition.variable)
(object_definition body: (template_body (val_definition pattern: (identifier) @name) @definition.variable))

; Comments and annotations.
(comment) @comment
(block_comment) @comment
(annotation) @attribute
