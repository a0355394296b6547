; Python definitions for the chunker (capture conventions: chunk/mod.rs).
; Functions nested in classes become methods by containment.

(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function

; Module-level assignments: UPPER_CASE names are constants.
((module (expression_statement (assignment left: (identifier) @name) @definition.constant))
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))
(module (expression_statement (assignment left: (identifier) @name) @definition.variable))
(module (type_alias_statement left: (type (identifier) @name)) @definition.type)

; Comments, decorators, and the nodes that wrap a definition.
(comment) @comment
(decorator) @attribute
(decorated_definition definition: (_) @wrapped) @wrapper
(module (expression_statement (assignment) @wrapped) @wrapper)
