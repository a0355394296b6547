; Kotlin definitions for the chunker (capture conventions: chunk/mod.rs).
; One node kind (class_declaration) holds classes, interfaces, enum and
; data classes: the keyword or body tells them apart. `object` is a module;
; a companion object's members are qualified by the enclosing class.

(class_declaration "interface" name: (identifier) @name) @definition.interface
(class_declaration name: (identifier) @name (enum_class_body)) @definition.enum
(class_declaration name: (identifier) @name) @definition.class
(object_declaration name: (identifier) @name) @definition.module
(function_declaration name: (identifier) @name) @definition.function
(type_alias type: (identifier) @name) @definition.type

; Top-level properties: `const val` and UPPER_CASE names are constants.
(source_file (property_declaration (modifiers (property_modifier) @_const)
  (variable_declaration (identifier) @name)) @definition.constant
  (#eq? @_const "const"))
((source_file (property_declaration (variable_declaration (identifier) @name)) @definition.constant)
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))
(source_file (property_declaration (variable_declaration (identifier) @name)) @definition.variable)

; Comments and annotations.
(line_comment) @comment
(block_comment) @comment
(annotation) @attribute
