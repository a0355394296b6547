; Go definitions for the chunker (capture conventions: chunk/mod.rs).
; @package qualifies every top-level definition (`pkg.Func`); methods are
; qualified by their receiver type (`Type.Method`) through @container.

(package_clause (package_identifier) @package)

(function_declaration name: (identifier) @name) @definition.function

(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @container
        (pointer_type (type_identifier) @container)
        (generic_type type: (type_identifier) @container)
        (pointer_type (generic_type type: (type_identifier) @container))
      ]))
  name: (field_identifier) @name) @definition.method
(method_declaration name: (field_identifier) @name) @definition.method

(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type

(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.variable)))

; Comments, and the declarations that wrap a single spec.
(comment) @comment
(const_declaration (const_spec) @wrapped) @wrapper
(var_declaration (var_spec) @wrapped) @wrapper
(type_declaration [(type_spec) (type_alias)] @wrapped) @wrapper
