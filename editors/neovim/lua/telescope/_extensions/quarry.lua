-- require('telescope').load_extension('quarry'); then :Telescope quarry
return require("telescope").register_extension({
  exports = {
    quarry = function(opts)
      require("quarry.telescope").picker(opts)
    end,
  },
})
