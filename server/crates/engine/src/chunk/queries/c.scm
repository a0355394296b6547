; C definitions, shared by C++ (capture conventions: chunk/mod.rs).
; @name.decl descends a declarator (`*name`, `name[]`, `name(...)`,
; `Type::name`) to the declared name. Declarations of functions without a
; body (prototypes) are not definitions.

(function_definition declarator: (_) @name.decl) @definition.function
(struct_specifier name: (_) @name.path body: (_)) @definition.struct
(union_specifier name: (_) @name.path body: (_)) @definition.struct
(enum_specifier name: (_) @name.path body: (_)) @definition.enum
(type_definition declarator: (_) @name.decl) @definition.type
(preproc_def name: (identifier) @name) @definition.constant
(preproc_function_def name: (identifier) @name) @definition.macro

; File-scope variables.
(translation_unit (declaration declarator: (init_declarator declarator: (_) @name.decl)) @definition.variable)
(translation_unit (declaration declarator: [(identifier) (array_declarator) (pointer_declarator)] @name.decl) @definition.variable)

; Comments.
(comment) @comment
