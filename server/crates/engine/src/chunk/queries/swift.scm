; Swift definitions for the chunker (capture conventions: chunk/mod.rs).
; One node kind (class_declaration) holds classes, structs, enums, actors
; and extensions: `declaration_kind` tells them apart. An extension is
; named by the type it extends, like a Rust impl.

(class_declaration declaration_kind: "struct" name: (type_identifier) @name) @definition.struct
(class_declaration declaration_kind: "enum" name: (type_identifier) @name) @definition.enum
(class_declaration declaration_kind: "extension" name: (user_type (type_identifier) @name)) @definition.impl
(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.interface
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.function
(init_declaration name: "init" @name) @definition.function
(typealias_declaration name: (type_identifier) @name) @definition.type

; Top-level `let` is a constant, `var` a variable.
(source_file (property_declaration (value_binding_pattern "let")
  name: (pattern bound_identifier: (simple_identifier) @name)) @definition.constant)
(source_file (property_declaration
  name: (pattern bound_identifier: (simple_identifier) @name)) @definition.variable)

; Comments and attributes.
(comment) @comment
(multiline_comment) @comment
(attribute) @attribute
