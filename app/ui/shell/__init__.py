"""The window shell: the application, the main window that assembles the features, menus, workspace, start page
and presentation mode."""
