; C# definitions for the chunker (capture conventions: chunk/mod.rs).
; A file-scoped namespace (`namespace A.B;`) qualifies every top-level
; definition through @package.

(file_scoped_namespace_declaration name: (_) @package)
(namespace_declaration name: (_) @name.path) @definition.module

(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(delegate_declaration name: (identifier) @name) @definition.type
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method

(field_declaration (modifier "const")
  (variable_declaration (variable_declarator name: (identifier) @name))) @definition.constant
(field_declaration (modifier "static") (modifier "readonly")
  (variable_declaration (variable_declarator name: (identifier) @name))) @definition.static
(field_declaration (modifier "readonly") (modifier "static")
  (variable_declaration (variable_declarator name: (identifier) @name))) @definition.static

; Comments and attributes.
(comment) @comment
(attribute_list) @attribute
