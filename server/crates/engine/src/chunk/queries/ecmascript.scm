; JavaScript definitions, shared by TypeScript and TSX (capture conventions:
; chunk/mod.rs). Names use (_) because TypeScript names classes with
; type_identifier where JavaScript uses identifier.

(class_declaration name: (_) @name) @definition.class
(function_declaration name: (_) @name) @definition.function
(generator_function_declaration name: (_) @name) @definition.function
(method_definition name: (_) @name) @definition.method

; Top-level bindings: functions and classes assigned to a name first, then
; `const` as constants and `let`/`var` as variables.
(program (lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.function))
(program (variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.function))
(program (export_statement (lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.function)))
(program (lexical_declaration
  (variable_declarator name: (identifier) @name value: (class)) @definition.class))
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name value: (class)) @definition.class)))

(program (lexical_declaration kind: "const"
  (variable_declarator name: (identifier) @name) @definition.constant))
(program (export_statement (lexical_declaration kind: "const"
  (variable_declarator name: (identifier) @name) @definition.constant)))
(program (lexical_declaration
  (variable_declarator name: (identifier) @name) @definition.variable))
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name) @definition.variable)))
(program (variable_declaration
  (variable_declarator name: (identifier) @name) @definition.variable))
(program (export_statement (variable_declaration
  (variable_declarator name: (identifier) @name) @definition.variable)))

; `Foo.prototype.bar = function () {}` and `exports.bar = () => {}`.
(program (expression_statement
  (assignment_expression
    left: (member_expression) @name.path
    right: [(arrow_function) (function_expression)]) @definition.function))

; Comments, decorators, and the nodes that wrap a definition (`export`, a
; declaration with a single declarator).
(comment) @comment
(html_comment) @comment
(decorator) @attribute
(export_statement declaration: (_) @wrapped) @wrapper
(program (lexical_declaration (variable_declarator) @wrapped) @wrapper)
(program (variable_declaration (variable_declarator) @wrapped) @wrapper)
(export_statement (lexical_declaration (variable_declarator) @wrapped) @wrapper)
(export_statement (variable_declaration (variable_declarator) @wrapped) @wrapper)
(program (expression_statement (assignment_expression) @wrapped) @wrapper)
