"""Looking inside trained models: a hierarchical model's attention, a structured model's
latent trees, a Tree Transformer's induced trees."""
