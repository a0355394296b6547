; TypeScript-only definitions, appended to ecmascript.scm for TypeScript and
; TSX (capture conventions: chunk/mod.rs).

(abstract_class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(type_alias_declaration name: (_) @name) @definition.type
(enum_declaration name: (_) @name) @definition.enum
(internal_module name: [(identifier) (nested_identifier)] @name.path) @definition.module
(internal_module name: (string) @name) @definition.module
(function_signature name: (_) @name) @definition.function
(method_signature name: (_) @name) @definition.method
(abstract_method_signature name: (_) @name) @definition.method

; Bindings at the top of a namespace count as top-level bindings.
(internal_module body: (statement_block (export_statement (lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.function))))
(internal_module body: (statement_block (export_statement (lexical_declaration kind: "const"
  (variable_declarator name: (identifier) @name) @definition.constant))))
(internal_module body: (statement_block (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name) @definition.variable))))
(internal_module body: (statement_block (lexical_declaration kind: "const"
  (variable_declarator name: (identifier) @name) @definition.constant)))
(internal_module body: (statement_block (lexical_declaration
  (variable_declarator name: (identifier) @name) @definition.variable)))

; More wrappers: `declare ...` and declarations at the top of a namespace.
(ambient_declaration (_) @wrapped) @wrapper
(internal_module body: (statement_block (lexical_declaration (variable_declarator) @wrapped) @wrapper))

; Class fields holding functions: `handleClick = () => {}`.
(public_field_definition
  name: (_) @name
  value: [(arrow_function) (function_expression)]) @definition.method
