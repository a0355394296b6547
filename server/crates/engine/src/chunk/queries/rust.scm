; Rust definitions for the chunker. Capture conventions are documented in
; chunk/mod.rs: @definition.<kind> marks the node, @name its name.
; Functions nested in impl and trait blocks become methods by containment.

(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name) @definition.module
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.static
(macro_definition name: (identifier) @name) @definition.macro

; Trait impls are named "<Trait> for <Type>"; members use the type as their
; container. The simple shapes come first, the catch-all shapes last.
(impl_item
  trait: [
    (type_identifier) @name.trait
    (scoped_type_identifier name: (type_identifier) @name.trait)
    (generic_type) @name.trait
  ]
  type: [
    (type_identifier) @name
    (scoped_type_identifier name: (type_identifier) @name)
    (generic_type type: [
      (type_identifier) @name
      (scoped_type_identifier name: (type_identifier) @name)
    ])
  ]) @definition.impl

(impl_item trait: (_) @name.trait type: (_) @name) @definition.impl

(impl_item
  type: [
    (type_identifier) @name
    (scoped_type_identifier name: (type_identifier) @name)
    (generic_type type: [
      (type_identifier) @name
      (scoped_type_identifier name: (type_identifier) @name)
    ])
  ]) @definition.impl

(impl_item type: (_) @name) @definition.impl

; Item-level macro invocations hide items in token trees; their bodies are
; re-parsed as items.
(source_file (macro_invocation) @reparse)
(source_file (expression_statement (macro_invocation) @reparse))
(declaration_list (macro_invocation) @reparse)

; Comments and attributes that may precede a definition.
(line_comment) @comment
(block_comment) @comment
(attribute_item) @attribute
